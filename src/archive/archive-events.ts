import { PendingApprovals, RequestRecord, StoredItem, TaskRecord } from '../state/state.entities';
import { ArchiveEvent, ArchiveEventType } from './archive-event';
import { cutField } from './payload-cut';

/**
 * The archive's events, derived from what the live store holds (docs/archive.md): a pure function
 * of a task's header and its request records, so deriving a request again, at a later commit or on
 * another replica after a crash, yields the same events under the same ids, and the archive's
 * `ON CONFLICT (event_id) DO NOTHING` keeps each once. Records only grow (traces, pauses, decisions
 * and model calls are appended, never removed), so an event once derivable stays derivable.
 *
 * Ids: `{tenant}/{request_id}/{type}/{n}` for a request's events (request ids are never reused, also
 * when a task id is deleted and created again), `{tenant}/{task_id}@{created_at}/{type}` for a task's.
 * Order: a task's timeline sorts by (seq, ord). `ord` is causal, not a time: it places each event
 * by the position of the message it belongs to in the request's conversation (messages are only
 * appended, so it never changes as the record grows): a model call at the assistant message it
 * produced, a pause and its decision at the assistant turn that asked for the calls, a call's start
 * after that turn's decision, its end at its result message, the request's end after everything.
 * Times come from two clocks (the process running the model and tools, and the store's, which
 * replicas estimate and may disagree on), so ordering by them could put a decision before its plan.
 */
/** One message's room in `ord`: its own events, then (for an assistant turn) its decision and its calls' starts. */
const SLOT = 1000;
/** Within an assistant turn's slot: the model call, the pause, the decision, then each call's start (by its place in the turn). */
const AT = { model: 0, pause: 1, decision: 2, start: 100 } as const;

const RISK_ORDER = ['read_only', 'client', 'write_low_risk', 'write_high_risk'];

/** Every event the task's records hold, request by request (a fork's copied requests as one `fork` event). */
export function eventsOfTask(task: TaskRecord, requests: RequestRecord[], maxPayloadBytes: number): ArchiveEvent[] {
  const copied = forkedCopies(task, requests);
  const events: ArchiveEvent[] = copied.length ? [forkEvent(task, copied.length)] : [];
  for (const r of requests) if (!copied.includes(r)) events.push(...eventsOfRequest(task, r, maxPayloadBytes));
  return events;
}

/** The events of one request as its record stands. */
export function eventsOfRequest(task: TaskRecord, r: RequestRecord, max: number): ArchiveEvent[] {
  const out: ArchiveEvent[] = [];
  const add = (type: ArchiveEventType, n: string | number, ord: number, at: string, payload: Record<string, unknown>) =>
    out.push({ ...base(task, r), eventId: `${r.tenantId}/${r.requestId}/${type}/${n}`, type, at, ord, payload });
  const place = placesOf(r);
  if (r.edits) add('edit', 0, 0, r.createdAt, { edits_request_id: r.edits.requestId, edits_seq: r.edits.seq });
  const user = r.messages.find((m) => m.role === 'user');
  add('request_accepted', 0, 1, r.createdAt, {
    items: user?.role === 'user' ? user.items.map((item) => cutItem(item, max)) : [],
    ...(r.userContext ? { user_context: r.userContext } : {}),
  });
  (r.modelCalls ?? []).forEach((m, i) =>
    add('model_call', i, place.modelCall(i), m.started_at, {
      model: m.model,
      duration_ms: m.duration_ms,
      usage: m.usage,
      ...(m.finish_reason ? { finish_reason: m.finish_reason } : {}),
    }),
  );
  const pauses = pausesOf(r);
  const turnOf = (pauseId: string) => place.turn(pauses.find((p) => p.pauseId === pauseId)?.calls[0]?.id);
  pauses.forEach((p) => add('plan_proposed', p.pauseId, place.turn(p.calls[0]?.id) + AT.pause, p.requestedAt, planPayload(p, max)));
  (r.approvals ?? []).forEach((d) =>
    d.action === 'refine'
      ? add('plan_refined', d.pauseId, turnOf(d.pauseId) + AT.decision, d.decidedAt, {
          pause_id: d.pauseId,
          refined_by: d.decidedBy,
          rejected: d.rejected,
          ...cutField('text', d.reason ?? '', max),
        })
      : add('decision', d.pauseId, turnOf(d.pauseId) + AT.decision, d.decidedAt, {
          pause_id: d.pauseId,
          action: d.action,
          approved: d.approved,
          rejected: d.rejected,
          decided_by: d.decidedBy,
          ...(d.reason !== undefined ? cutField('reason', d.reason, max) : {}),
          ...(d.reasons ? { reasons: d.reasons } : {}),
        }),
  );
  r.toolCalls.forEach((t) => {
    // Rejected and canceled calls never started: their decision (or the request's end) says so.
    if (t.outcome === 'rejected' || t.outcome === 'canceled') return;
    const call = { tool_call_id: t.id, name: t.name };
    add('tool_call_started', t.id, place.start(t.id), t.started_at, { ...call, ...cutField('arguments', t.arguments, max) });
    if (t.outcome === undefined) return;
    const ended = new Date(Date.parse(t.started_at) + (t.duration_ms ?? 0)).toISOString();
    const payload = { ...call, outcome: t.outcome, duration_ms: t.duration_ms ?? 0, ...cutField('result', t.result, max) };
    // What the call added to the answer's extra_data, each value cut as results are.
    if (t.extra_data?.length) Object.assign(payload, { extra_data: t.extra_data.map((i) => ({ key: i.key, ...cutField('value', i.value, max) })) });
    add(t.outcome === 'ok' ? 'tool_call_completed' : 'tool_call_failed', t.id, place.result(t.id), ended, payload);
  });
  // A request's end comes after every message it holds (a record that ended grows no more).
  const end = place.end;
  const lastPause = pauses.at(-1);
  if (r.reason === 'expired' && lastPause) add('approval_expired', lastPause.pauseId, end + 1, r.updatedAt, { pause_id: lastPause.pauseId });
  if (r.status === 'Completed') add('request_completed', 0, end + 2, r.updatedAt, { ...cutField('output', r.output, max), token_usage: r.tokenUsage });
  else if (r.status === 'Failed')
    add('request_failed', 0, end + 2, r.updatedAt, { reason: r.reason ?? 'failed', ...(r.error ? { error: r.error } : {}), token_usage: r.tokenUsage });
  else if (r.status === 'Canceled') add('request_canceled', 0, end + 2, r.updatedAt, { reason: r.reason ?? 'canceled', token_usage: r.tokenUsage });
  return out;
}

/**
 * Where each event of a request goes in `ord` (see the top of this file), from the positions of its
 * messages: the i-th model call at the i-th assistant message (one with no message, the failed last
 * call of a failed request, after every message), a call's turn at the assistant message that asked
 * for it, its start after that turn's decision, its end at its result message.
 */
function placesOf(r: RequestRecord) {
  const assistants: number[] = [];
  const askedIn = new Map<string, { turn: number; index: number }>();
  const answeredIn = new Map<string, number>();
  r.messages.forEach((m, k) => {
    if (m.role === 'assistant') {
      assistants.push(k);
      (m.tool_calls ?? []).forEach((c, index) => askedIn.set(c.id, { turn: k, index }));
    } else if (m.role === 'tool') answeredIn.set(m.tool_call_id, k);
  });
  const end = r.messages.length * SLOT;
  return {
    end,
    modelCall: (i: number) => (assistants[i] !== undefined ? assistants[i]! * SLOT + AT.model : end + 1 + i),
    turn: (callId: string | undefined) => {
      const asked = callId === undefined ? undefined : askedIn.get(callId);
      return asked ? asked.turn * SLOT : end;
    },
    start: (callId: string) => {
      const asked = askedIn.get(callId);
      return asked ? asked.turn * SLOT + AT.start + Math.min(asked.index, SLOT - AT.start - 1) : end;
    },
    result: (callId: string) => {
      const k = answeredIn.get(callId);
      return k === undefined ? end : k * SLOT;
    },
  };
}

/** The task's deletion (its live records are about to go; the archive's rows stay). */
export function taskDeletedEvent(task: TaskRecord, at: string, by: string): ArchiveEvent {
  return { ...taskBase(task), eventId: `${task.tenantId}/${task.taskId}@${task.createdAt}/task_deleted`, type: 'task_deleted', at, ord: 0, payload: { by } };
}

/** A session's deletion (of one agent's tasks in it), after its tasks' own `task_deleted` rows. */
export function sessionDeletedEvent(who: { tenantId: string; ownerId: string }, sessionId: string, agent: string, at: string, tasks: number): ArchiveEvent {
  const [agentName, agentVersion] = splitAgent(agent);
  return {
    eventId: `${who.tenantId}/session/${who.ownerId}/${sessionId}/${agent}@${at}/session_deleted`,
    tenantId: who.tenantId,
    ownerId: who.ownerId,
    sessionId,
    taskId: '',
    agentName,
    agentVersion,
    type: 'session_deleted',
    at,
    seq: 0,
    ord: 0,
    payload: { tasks },
  };
}

/** Every pause of a request, in order (records stored before `pauses` existed hold only the current one). */
export function pausesOf(r: RequestRecord): PendingApprovals[] {
  if (r.pauses?.length) return r.pauses;
  return r.pendingApprovals ? [r.pendingApprovals] : [];
}

/** The highest risk among a pause's calls (read_only < client < write_low_risk < write_high_risk). */
export function maxRisk(p: PendingApprovals): string | undefined {
  let best: string | undefined;
  for (const c of p.calls) if (c.risk && (best === undefined || RISK_ORDER.indexOf(c.risk) > RISK_ORDER.indexOf(best))) best = c.risk;
  return best;
}

function planPayload(p: PendingApprovals, max: number): Record<string, unknown> {
  return {
    pause_id: p.pauseId,
    plan: p.plan,
    steps: p.calls.map((c) => ({
      tool_call_id: c.id,
      name: c.name,
      ...cutField('arguments', c.arguments, max),
      ...(c.risk ? { risk: c.risk } : {}),
      pending: p.pending.includes(c.id),
      ...(c.approvalReason ? { approval_reason: c.approvalReason } : {}),
    })),
    ...(maxRisk(p) ? { max_risk: maxRisk(p) } : {}),
    ...(p.autonomyLevel ? { autonomy_level: p.autonomyLevel } : {}),
    ...(p.expiresAt ? { expires_at: p.expiresAt } : {}),
  };
}

function cutItem(item: StoredItem, max: number): Record<string, unknown> {
  return { content_type: item.content_type, ...cutField('content', item.content, max) };
}

/** A fork's new task starts with copies of the source's requests: they keep their first creation time, older than the task. */
function forkedCopies(task: TaskRecord, requests: RequestRecord[]): RequestRecord[] {
  if (!task.metadata.forked_from_task_id) return [];
  return requests.filter((r) => r.createdAt < task.createdAt);
}

function forkEvent(task: TaskRecord, copied: number): ArchiveEvent {
  return {
    ...taskBase(task),
    eventId: `${task.tenantId}/${task.taskId}@${task.createdAt}/fork`,
    type: 'fork',
    at: task.createdAt,
    seq: 0,
    ord: 0,
    payload: { from_task_id: task.metadata.forked_from_task_id, from_request_id: task.metadata.forked_from_request_id, requests: copied },
  };
}

function base(task: TaskRecord, r: RequestRecord): Omit<ArchiveEvent, 'eventId' | 'type' | 'at' | 'ord' | 'payload'> {
  return { ...taskBase(task), requestId: r.requestId, seq: r.seq };
}

function taskBase(task: TaskRecord): Omit<ArchiveEvent, 'eventId' | 'type' | 'at' | 'ord' | 'payload'> {
  const [agentName, agentVersion] = splitAgent(task.agent);
  return { tenantId: task.tenantId, ownerId: task.ownerId, sessionId: task.sessionId, taskId: task.taskId, agentName, agentVersion, seq: task.requestCount };
}

/** `"{name}:{version}"` → [name, version]. */
function splitAgent(agent: string): [string, string] {
  const colon = agent.lastIndexOf(':');
  return colon < 0 ? [agent, ''] : [agent.slice(0, colon), agent.slice(colon + 1)];
}
