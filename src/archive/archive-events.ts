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
 * Order: a task's timeline sorts by (seq, at, ord); `ord` is the kind's place in a request's life
 * (below) times 10 000 plus the event's index among its kind, so events of one millisecond keep
 * their causal order; a model call after the first sorts after the tool calls' ends (LATER_MODEL_CALL).
 */
const RANK: Record<ArchiveEventType, number> = {
  fork: 0,
  edit: 1,
  request_accepted: 2,
  model_call: 3,
  plan_proposed: 4,
  decision: 5,
  plan_refined: 6,
  tool_call_started: 7,
  tool_call_completed: 8,
  tool_call_failed: 8,
  approval_expired: 9,
  request_completed: 10,
  request_failed: 10,
  request_canceled: 10,
  task_deleted: 11,
  session_deleted: 12,
  principal_erased: 13,
};

/** The index (among model calls) of a model call after the first is offset by this: after the tool calls' ends of its millisecond. */
const LATER_MODEL_CALL = (RANK.tool_call_completed - RANK.model_call) * 10_000 + 5_000;

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
  const add = (type: ArchiveEventType, n: string | number, i: number, at: string, payload: Record<string, unknown>) =>
    out.push({ ...base(task, r), eventId: `${r.tenantId}/${r.requestId}/${type}/${n}`, type, at, ord: RANK[type] * 10_000 + i, payload });
  if (r.edits) add('edit', 0, 0, r.createdAt, { edits_request_id: r.edits.requestId, edits_seq: r.edits.seq });
  const user = r.messages.find((m) => m.role === 'user');
  add('request_accepted', 0, 0, r.createdAt, {
    items: user?.role === 'user' ? user.items.map((item) => cutItem(item, max)) : [],
    ...(r.userContext ? { user_context: r.userContext } : {}),
  });
  // A later model call follows the tool calls before it: in the same millisecond it sorts after their ends (sub-millisecond tools are common).
  (r.modelCalls ?? []).forEach((m, i) =>
    add('model_call', i, i === 0 ? 0 : LATER_MODEL_CALL + i, m.started_at, {
      model: m.model,
      duration_ms: m.duration_ms,
      usage: m.usage,
      ...(m.finish_reason ? { finish_reason: m.finish_reason } : {}),
    }),
  );
  pausesOf(r).forEach((p, i) => add('plan_proposed', p.pauseId, i, p.requestedAt, planPayload(p, max)));
  (r.approvals ?? []).forEach((d, i) =>
    d.action === 'refine'
      ? add('plan_refined', d.pauseId, i, d.decidedAt, {
          pause_id: d.pauseId,
          refined_by: d.decidedBy,
          rejected: d.rejected,
          ...cutField('text', d.reason ?? '', max),
        })
      : add('decision', d.pauseId, i, d.decidedAt, {
          pause_id: d.pauseId,
          action: d.action,
          approved: d.approved,
          rejected: d.rejected,
          decided_by: d.decidedBy,
          ...(d.reason !== undefined ? cutField('reason', d.reason, max) : {}),
          ...(d.reasons ? { reasons: d.reasons } : {}),
        }),
  );
  r.toolCalls.forEach((t, i) => {
    // Rejected and canceled calls never started: their decision (or the request's end) says so.
    if (t.outcome === 'rejected' || t.outcome === 'canceled') return;
    const call = { tool_call_id: t.id, name: t.name };
    add('tool_call_started', t.id, i, t.started_at, { ...call, ...cutField('arguments', t.arguments, max) });
    if (t.outcome === undefined) return;
    // The end to the millisecond at or below the real one: started_at is cut to the millisecond and duration_ms rounded, so their
    // sum can be a millisecond past the next model call's start (stamped after the call ended), which would sort before it.
    const ended = new Date(Date.parse(t.started_at) + Math.max(0, (t.duration_ms ?? 0) - 1)).toISOString();
    const payload = { ...call, outcome: t.outcome, duration_ms: t.duration_ms ?? 0, ...cutField('result', t.result, max) };
    add(t.outcome === 'ok' ? 'tool_call_completed' : 'tool_call_failed', t.id, i, ended, payload);
  });
  const lastPause = pausesOf(r).at(-1);
  if (r.reason === 'expired' && lastPause) add('approval_expired', lastPause.pauseId, 0, r.updatedAt, { pause_id: lastPause.pauseId });
  if (r.status === 'Completed') add('request_completed', 0, 0, r.updatedAt, { ...cutField('output', r.output, max), token_usage: r.tokenUsage });
  else if (r.status === 'Failed')
    add('request_failed', 0, 0, r.updatedAt, { reason: r.reason ?? 'failed', ...(r.error ? { error: r.error } : {}), token_usage: r.tokenUsage });
  else if (r.status === 'Canceled') add('request_canceled', 0, 0, r.updatedAt, { reason: r.reason ?? 'canceled', token_usage: r.tokenUsage });
  return out;
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
