/**
 * The soak's independent history checker (docs/reliability.md). It trusts nothing the servers say
 * about themselves: only what the clients saw (every request sent and every answer received, with
 * times) and what the store holds at the end, read back through the API (`GET …/tasks/{task_id}`
 * as each conversation's owner). Pure: the soak (soak-run.ts) records, this judges.
 *
 * Each turn the clients send carries a text of its own (`Operation.text`), so a turn is found in
 * the stored history by its text wherever it landed.
 */

/** One turn as a client sent it, and what came back for each attempt (retries of one turn share its Idempotency-Key). */
export interface Operation {
  id: string;
  /** The conversation (one client, one task, turns one after another). */
  conversation: string;
  /** The owner the client called as (dev auth's user header). */
  user: string;
  /**
   * Turns (their text is stored): `first`, `follow-on`, `edit` (a completed turn's text replaced,
   * rerun as a new request). The others act on the task: `cancel` (of the turn `target` names, an
   * op id), `fork` (of the request `target` names), `delete` (of the conversation's task).
   */
  kind: 'first' | 'follow-on' | 'edit' | 'cancel' | 'fork' | 'delete';
  /** cancel: the op id of the turn it cancels; edit and fork: the request id edited or forked. */
  target?: string;
  /** A streamed turn: every event the client saw, over its first connection and each reattach, in the order seen. */
  events?: SeenEvent[];
  /** fork: the user texts of the new task as the 201 answer listed them. */
  forkTexts?: string[];
  /** The user turn's text: unique over the whole soak. */
  text: string;
  /** Its place in the conversation's turns, as sent (0 for the first; two turns sent at once share one). */
  index: number;
  attempts: Attempt[];
  /** The decisions sent on the turn's pause, when it paused for an approval. */
  decisions?: Decision[];
}

/** A stream event as a client saw it: its id (`{seq}-{n}`), its name, and which connection (0: the POST, then each reattach) brought it. */
export interface SeenEvent {
  id?: string;
  event: string;
  connection: number;
}

/** A decision a client sent on a paused turn (the resume route), and what came back for each attempt (one Idempotency-Key). */
export interface Decision {
  /**
   * `approve`/`reject` in time; `expire`: an approve sent after the pause's TTL (it must be 409
   * APPROVAL_EXPIRED and run nothing); `stale`: a decided pause's decision sent again under a new
   * key (it must not be 2xx).
   */
  kind: 'approve' | 'reject' | 'expire' | 'stale';
  requestId: string;
  pauseId: string;
  /** The calls the pause listed. */
  callIds: string[];
  attempts: Attempt[];
}

export interface Attempt {
  replica: number;
  startedAt: number;
  endedAt: number;
  /** HTTP status, or 0 when no answer came (connection refused or dropped). */
  status: number;
  /** The answer's task_id, when it named one. */
  taskId?: string;
  /** The answer's status field (StateResponse) or problem code. */
  outcome?: string;
  /** What the client saw of the transport failure. */
  error?: string;
  /** The request the answer named (a Paused answer's also its pause and the calls it waits on). */
  requestId?: string;
  pauseId?: string;
  callIds?: string[];
}

/** A request as `GET …/tasks/{task_id}` lists it: the fields the checker reads. */
export interface StoredRequest {
  request_id: string;
  seq: number;
  status: string;
  reason?: string | null;
  updated_at?: string;
  /** How many messages its first model call had (system prompt included); null when it did not complete. */
  model_input_messages?: number | null;
  messages: { role: string; items?: { content?: string }[]; content?: unknown }[];
  /** The request's tool calls and how each ended (`ok`: its handler ran and returned). */
  tool_calls?: { id: string; name: string; outcome?: string }[];
  /** edit: the request it replaced; the request an edit replaced (or a later one it superseded) names the edit. */
  edit_of?: string | null;
  superseded_by?: string | null;
  /** The decisions taken on its pauses. */
  approvals?: { pause_id: string }[];
}

export interface StoredTask {
  task_id: string;
  status: string;
  requests: StoredRequest[];
}

/** What the end of the soak read back: each conversation's task as its owner sees it (404: null), and as someone else sees it. */
export interface FinalRead {
  conversation: string;
  taskId: string | undefined;
  task: StoredTask | null;
  /** The status another user got reading the same task (anything but 401/403/404 leaks it). */
  strangerStatus?: number;
  /** A task made by a fork: the fork op's id (its turns are copies: not counted as the conversation's). */
  forkOf?: string;
}

/** The kinds whose text is a user turn stored in the conversation's task. */
const TURNS = new Set<Operation['kind']>(['first', 'follow-on', 'edit']);

export interface Violation {
  rule: string;
  detail: string;
  /** The operations that show it. */
  operations: string[];
}

export interface CheckOptions {
  /** When the checker read the tasks (ms since the epoch). */
  readAt: number;
  /** The lease plus a grace: no request may be Running longer than this at the end (ms). */
  runningLimitMs: number;
  /** The tool calls the model asked for (soak-model.ts), and how many times each one's side effect happened (soak-tools.ts). */
  tools?: { issued: { id: string; tool: string; text: string }[]; runs: Map<string, number> };
}

const ok = (a: Attempt) => a.status >= 200 && a.status < 300;

/** The user text of a stored request (its first user message's text items). */
export function userTextOf(r: StoredRequest): string | undefined {
  const user = r.messages.find((m) => m.role === 'user');
  return user?.items?.map((i) => i.content ?? '').join('');
}

/**
 * Every rule the soak promises, over the clients' observations and the final read:
 * 1. a turn answered 2xx (Completed) is stored Completed exactly once, in its own task;
 * 2. no turn is stored Completed twice (duplicated), nor in another conversation's task;
 * 3. each task's Completed turns are in the order their client sent them;
 * 4. no request is Running past the lease plus a grace at the end;
 * 5. a turn that failed visibly is stored as Failed/Canceled with a reason, or not at all;
 * 6. every answer named the conversation's task; no other user can read it;
 * 7. no turn ran interleaved with another: the model saw every earlier completed turn of its task
 *    (its input is the system prompt, the earlier completed turns' messages and its own message:
 *    the soak's agent has no history limit and no user context);
 * 8. a turn answered 202 Queued is stored, and after the turn it was queued behind;
 * 9. a streamed turn's events, across reattaches on other replicas, are each seen once, in order (checkStream);
 * 10. no tool call ran twice for one call id, no rejected or expired call ran, no approved call was
 *    lost, no decided pause was decided again (checkTools).
 */
export function checkHistory(operations: Operation[], reads: FinalRead[], options: CheckOptions): Violation[] {
  const violations: Violation[] = [];
  const add = (rule: string, detail: string, ops: Operation[]) => violations.push({ rule, detail, operations: ops.map((o) => o.id) });
  const byText = new Map(operations.map((o) => [o.text, o]));
  const readOf = new Map(reads.filter((r) => !r.forkOf).map((r) => [r.conversation, r]));
  // Where each text is stored, over every task read (but forks: copies by design).
  const stored = new Map<string, { conversation: string; request: StoredRequest }[]>();
  for (const read of readOf.values()) {
    for (const request of read.task?.requests ?? []) {
      const text = userTextOf(request);
      if (text === undefined) continue;
      const places = stored.get(text) ?? [];
      places.push({ conversation: read.conversation, request });
      stored.set(text, places);
    }
  }

  // Conversations whose task was deleted (a DELETE sent, the task gone): their turns are gone with it.
  const deleted = new Set(operations.filter((o) => o.kind === 'delete' && readOf.get(o.conversation)?.task === null).map((o) => o.conversation));
  for (const op of operations) {
    if (!TURNS.has(op.kind) || deleted.has(op.conversation)) continue;
    const places = stored.get(op.text) ?? [];
    const completed = places.filter((p) => p.request.status === 'Completed');
    const answered = op.attempts.filter(ok);
    const read = readOf.get(op.conversation);
    // An approve answered Completed is the turn answered Completed (the run went on under the same request).
    const approvedCompleted = (op.decisions ?? []).some((d) => d.kind === 'approve' && d.attempts.some((a) => ok(a) && a.outcome === 'Completed'));
    for (const a of answered) {
      if (read?.taskId && a.taskId && a.taskId !== read.taskId) add('answer-task', `answered for task ${a.taskId}, the conversation's is ${read.taskId}`, [op]);
    }
    if ((answered.some((a) => a.outcome === 'Completed') || approvedCompleted) && completed.length === 0) {
      add('lost-turn', `answered Completed (${answered.length} answer(s)) but not stored Completed`, [op]);
    }
    if (completed.length > 1) add('duplicate-turn', `stored Completed ${completed.length} times (seq ${completed.map((p) => p.request.seq).join(', ')})`, [op]);
    for (const p of places) {
      if (p.conversation !== op.conversation) add('foreign-turn', `stored in the task of conversation ${p.conversation}`, [op]);
    }
    // A turn answered 202 Queued: it must be stored, and run (or end with a reason: superseded, abandoned…).
    const queued = answered.find((a) => a.status === 202 && a.outcome === 'Queued');
    if (queued && places.length === 0) add('queued-lost', `answered 202 Queued (request ${queued.requestId}) but not stored`, [op]);
    if (queued && completed.length === 0) {
      for (const p of places)
        if (['Failed', 'Canceled'].includes(p.request.status) && !p.request.reason)
          add('failure-without-reason', `queued, then stored ${p.request.status} with no reason`, [op]);
    }
    if (answered.length === 0 && completed.length === 0) {
      for (const p of places) {
        if (p.request.status !== 'Running' && !['Failed', 'Canceled'].includes(p.request.status)) {
          add('unexplained-turn', `never answered 2xx, stored ${p.request.status}`, [op]);
        } else if (p.request.status !== 'Running' && !p.request.reason) {
          add('failure-without-reason', `stored ${p.request.status} with no reason`, [op]);
        }
      }
    }
  }

  for (const read of readOf.values()) {
    if (!read.task) continue;
    // Order: the Completed turns' send order must increase with their seq.
    const turns = read.task.requests
      .filter((r) => r.status === 'Completed')
      .sort((a, b) => a.seq - b.seq)
      .map((r) => byText.get(userTextOf(r) ?? ''))
      .filter((o): o is Operation => o !== undefined && o.conversation === read.conversation)
      // A turn stored twice is a duplicate (reported above), not also an order break.
      .filter((o, i, all) => all.indexOf(o) === i);
    for (let i = 1; i < turns.length; i++) {
      // Equal indexes: two turns sent at once, either order is right.
      if (turns[i]!.index < turns[i - 1]!.index) add('order', `turn ${turns[i]!.index} stored after turn ${turns[i - 1]!.index}`, [turns[i - 1]!, turns[i]!]);
    }
    // The model's input: every earlier Completed request but those an edit had superseded by then
    // (an edit supersedes from the request it edits up to itself, so it and every later request skip them).
    const seqOf = new Map(read.task.requests.map((r) => [r.request_id, r.seq]));
    const requests = [...read.task.requests].sort((a, b) => a.seq - b.seq);
    for (const r of requests) {
      if (r.status !== 'Completed') continue;
      const replayed = requests
        .filter((e) => e.seq < r.seq && e.status === 'Completed')
        .filter((e) => !e.superseded_by || (seqOf.get(e.superseded_by) ?? Infinity) > r.seq)
        .reduce((n, e) => n + e.messages.length, 0);
      // A request resumed after an approval records its resumed run's input: its own user turn and
      // the paused model turn (the soak's pauses are one call, decided once).
      const expected = 1 + replayed + 1 + (r.approvals?.length ? 1 : 0);
      if (typeof r.model_input_messages === 'number' && r.model_input_messages !== expected) {
        const op = byText.get(userTextOf(r) ?? '');
        add(
          'interleaved',
          `request seq ${r.seq} ran on ${r.model_input_messages} messages, not ${expected}: it did not see every earlier completed turn`,
          op ? [op] : [],
        );
      }
    }
    for (const r of read.task.requests) {
      // A queued request runs once the one ahead ends: one still Queued after the quiet period is stuck too.
      if (r.status !== 'Running' && r.status !== 'Queued') continue;
      const since = r.updated_at ? options.readAt - Date.parse(r.updated_at) : Infinity;
      // Stamped far in the future: by a replica whose clock ran ahead; after the quiet period nothing should run, so it is stuck too.
      if (Math.abs(since) > options.runningLimitMs) {
        const op = byText.get(userTextOf(r) ?? '');
        add('stuck-running', `request ${r.request_id} ${r.status} for ${Math.round(since)} ms (limit ${options.runningLimitMs})`, op ? [op] : []);
      }
    }
  }
  // Two turns sent at once on a queueing task: the one answered 202 Queued waited for the other, so it is stored after it.
  // When both were answered Queued, each waited behind an earlier request still running (one whose
  // replica was killed under it holds the task until its lease lapses): neither waited for the other,
  // and either order is right.
  const wasQueued = (o: Operation) => o.attempts.some((a) => a.status === 202 && a.outcome === 'Queued');
  for (const op of operations) {
    if (!wasQueued(op) || !TURNS.has(op.kind)) continue;
    const partner = operations.find((o) => o !== op && o.conversation === op.conversation && o.index === op.index && TURNS.has(o.kind));
    if (partner && wasQueued(partner)) continue;
    const seqOf = (o: Operation) => (stored.get(o.text) ?? []).find((p) => p.conversation === o.conversation)?.request.seq;
    const [mine, theirs] = [seqOf(op), partner ? seqOf(partner) : undefined];
    if (partner && mine !== undefined && theirs !== undefined && mine < theirs)
      add('queue-order', `queued behind its pair, yet stored at seq ${mine}, before it (seq ${theirs})`, [partner, op]);
  }
  for (const read of reads) {
    if (read.strangerStatus !== undefined && ![401, 403, 404].includes(read.strangerStatus)) {
      add('foreign-read', `another user read the task: ${read.strangerStatus}`, operations.filter((o) => o.conversation === read.conversation).slice(0, 1));
    }
  }
  checkTaskOperations(operations, reads, add);
  for (const op of operations) if (op.events) checkStream(op, op.events, add);
  if (options.tools) checkTools(operations, reads, options.tools, add);
  return violations;
}

/** The two numbers of an event id `{seq}-{n}` (NaN when malformed). */
function eventIdOf(id: string): [number, number] {
  const m = /^(\d+)-(\d+)$/.exec(id);
  return m ? [Number(m[1]), Number(m[2])] : [NaN, NaN];
}

/** Events that end a stream: nothing of the request comes after them. */
const FINAL_EVENTS = new Set(['final-response', 'error']);

/**
 * A streamed turn's events, over every connection the client made (the POST, then each reattach
 * on some replica with Last-Event-ID): each id seen once, all of one request, in increasing order,
 * and nothing after the final event.
 */
function checkStream(op: Operation, events: SeenEvent[], add: (rule: string, detail: string, ops: Operation[]) => void): void {
  const seen = new Set<string>();
  let last: [number, number] | undefined;
  let ended: SeenEvent | undefined;
  for (const e of events) {
    const where = `connection ${e.connection}`;
    if (ended) {
      add('stream-events', `${e.event} ${e.id ?? ''} on ${where} after the final event (${ended.event} ${ended.id ?? ''})`, [op]);
      return;
    }
    if (FINAL_EVENTS.has(e.event)) ended = e;
    if (e.id === undefined) continue;
    if (seen.has(e.id)) {
      add('stream-events', `event ${e.id} (${e.event}) seen twice, again on ${where}`, [op]);
      return;
    }
    seen.add(e.id);
    const id = eventIdOf(e.id);
    if (last && id[0] !== last[0]) {
      add('stream-events', `event ${e.id} on ${where} is of request seq ${id[0]}, not ${last[0]}`, [op]);
      return;
    }
    if (last && !(id[1] > last[1])) {
      add('stream-events', `event ${e.id} on ${where} came after ${last.join('-')}: out of order`, [op]);
      return;
    }
    last = id;
  }
}

/**
 * Deletes, cancels, edits and forks: a task whose DELETE was answered 204 reads as gone for its
 * owner; a request a cancel was answered 2xx for did not complete (it ended Canceled, or Failed,
 * with a reason; after a 202, completed only before its runner's next renewal); an edit answered 2xx is stored as the edit of the request asked, which is
 * superseded; a fork holds the turns its 201 listed, stored as read, ending with the request asked,
 * each a completed turn of its source once, in send order.
 */
function checkTaskOperations(operations: Operation[], reads: FinalRead[], add: (rule: string, detail: string, ops: Operation[]) => void): void {
  const readOf = new Map(reads.filter((r) => !r.forkOf).map((r) => [r.conversation, r]));
  const forkRead = new Map(reads.filter((r) => r.forkOf).map((r) => [r.forkOf!, r]));
  const byText = new Map(operations.map((o) => [o.text, o]));
  for (const op of operations) {
    const answer = op.attempts.find(ok);
    const task = readOf.get(op.conversation)?.task;
    const request = (id: string | undefined) => task?.requests.find((r) => r.request_id === id);
    if (op.kind === 'delete' && answer && task)
      add('deleted-visible', `DELETE answered ${answer.status}, yet its owner still reads task ${task.task_id}`, [op]);
    // The rest is judged on the conversation's task: one deleted since (read as gone) holds nothing to judge.
    if (!task) continue;
    if (op.kind === 'cancel' && answer?.requestId) {
      const r = request(answer.requestId);
      const turn = operations.find((o) => o.id === op.target);
      // 200: canceled here; 202: asked through the task of the replica running it, whose finish
      // then stores it Canceled even when its answer came before its renewal saw the cancel
      // (src/tasks/lifecycle/finish.ts). A cancel that came after the finish is a 409, not a 2xx.
      if (r?.status === 'Completed')
        add('cancel-outcome', `cancel answered ${answer.status} for request seq ${r.seq}, which is stored Completed`, [op, ...(turn ? [turn] : [])]);
      else if (r && ['Failed', 'Canceled'].includes(r.status) && !r.reason)
        add('cancel-outcome', `canceled request seq ${r.seq} stored ${r.status} with no reason`, [op]);
    }
    if (op.kind === 'edit' && answer?.requestId && answer.outcome === 'Completed') {
      const e = request(answer.requestId);
      const edited = request(op.target);
      if (!e || e.edit_of !== op.target)
        add('edit-history', `edit answered Completed as ${answer.requestId}, stored with edit_of ${e?.edit_of ?? '(not stored)'}, not ${op.target}`, [op]);
      else if (!edited?.superseded_by) add('edit-history', `the edited request ${op.target} is not superseded`, [op]);
    }
    if (op.kind === 'fork' && answer && op.forkTexts) {
      const fork = forkRead.get(op.id);
      const texts = (fork?.task?.requests ?? []).sort((a, b) => a.seq - b.seq).map((r) => userTextOf(r) ?? '');
      const asked = request(op.target);
      const turns = texts.map((t) => byText.get(t));
      const problem =
        texts.join('\n') !== op.forkTexts.join('\n')
          ? `stored with ${texts.length} turns, the 201 listed ${op.forkTexts.length} (or others)`
          : !asked || texts.at(-1) !== userTextOf(asked)
            ? `its last turn is not the request asked (${op.target})`
            : turns.some(
                  (t, i) =>
                    !t || t.conversation !== op.conversation || !TURNS.has(t.kind) || (i > 0 && t.index < turns[i - 1]!.index) || turns.indexOf(t) !== i,
                )
              ? "its turns are not the conversation's, once each, in send order"
              : undefined;
      if (problem) add('fork-history', `fork ${answer.taskId ?? ''}: ${problem}`, [op]);
    }
  }
}

/**
 * The tools' rules, over the counter (what ran, counted outside the replicas) and what the clients
 * and the store say of each call: no call ran twice; none that was rejected or expired ran; none that
 * was approved (answered Completed) or is stored as run was lost.
 */
function checkTools(
  operations: Operation[],
  reads: FinalRead[],
  tools: NonNullable<CheckOptions['tools']>,
  report: (rule: string, detail: string, ops: Operation[]) => void,
): void {
  // A call seen by two sides (the client's decision and the store) is reported once per rule.
  const seen = new Set<string>();
  const add = (rule: string, detail: string, ops: Operation[]) => {
    const key = `${rule} ${/call (\S+)/.exec(detail)?.[1] ?? detail}`;
    if (!seen.has(key)) report(rule, detail, ops);
    seen.add(key);
  };
  const byText = new Map(operations.map((o) => [o.text, o]));
  const opOfCall = new Map(tools.issued.map((c) => [c.id, byText.get(c.text)]));
  const opsOf = (id: string) => {
    const op = opOfCall.get(id);
    return op ? [op] : [];
  };
  const runs = (id: string) => tools.runs.get(id) ?? 0;
  for (const [id, n] of tools.runs) if (n > 1) add('tool-ran-twice', `call ${id} ran ${n} times`, opsOf(id));
  for (const op of operations) {
    for (const d of op.decisions ?? []) {
      const answered = d.attempts.filter(ok);
      if (d.kind === 'reject' && answered.length) {
        for (const id of d.callIds) if (runs(id)) add('rejected-ran', `call ${id} ran though its rejection was answered ${answered[0]!.outcome}`, [op]);
      }
      if (d.kind === 'expire') {
        if (answered.length)
          add('expired-decided', `an approve sent after the pause's TTL was answered ${answered[0]!.status} ${answered[0]!.outcome ?? ''}`, [op]);
        else if (d.attempts.some((a) => a.outcome === 'APPROVAL_EXPIRED'))
          for (const id of d.callIds) if (runs(id)) add('rejected-ran', `call ${id} ran though its pause expired`, [op]);
      }
      if (d.kind === 'stale' && answered.length) add('stale-decision', `a decided pause's decision sent again was answered ${answered[0]!.status}`, [op]);
      if (d.kind === 'approve' && answered.some((a) => a.outcome === 'Completed')) {
        for (const id of d.callIds) if (!runs(id)) add('approved-lost', `call ${id} approved (answered Completed) but never ran`, [op]);
      }
    }
  }
  // The store's side: a call stored as run ran (once); the calls of a request rejected or expired never ran.
  const issuedFor = new Map<string, string[]>();
  for (const c of tools.issued) issuedFor.set(c.text, [...(issuedFor.get(c.text) ?? []), c.id]);
  for (const read of reads) {
    for (const r of read.task?.requests ?? []) {
      for (const c of r.tool_calls ?? []) {
        if (c.outcome === 'ok' && opOfCall.has(c.id) && !runs(c.id))
          add('approved-lost', `call ${c.id} stored as run (request seq ${r.seq}) but never ran`, opsOf(c.id));
      }
      if (r.reason === 'rejected' || r.reason === 'expired') {
        for (const id of issuedFor.get(userTextOf(r) ?? '') ?? [])
          if (runs(id)) add('rejected-ran', `call ${id} ran though its request is stored Canceled (${r.reason})`, opsOf(id));
      }
    }
  }
}

/**
 * For each kill -9 (`at`, the replica), the tasks the replica held — a turn in flight on it at the
 * kill, its connection cut by the kill (not dropped by the client) — and for each, the time from
 * the kill to the start of the first attempt of a later turn on that task answered 2xx (admitted:
 * while the dead request's lease holds, a turn is 409 TASK_BUSY, and its own retry waits to be
 * answered 503 ABANDONED). An upper bound, by the clients' pacing (0.2 to 0.5 s between attempts).
 */
export function timesToFree(operations: Operation[], kills: { at: number; replica: number }[]): number[] {
  const times: number[] = [];
  const turns = operations.filter((o) => TURNS.has(o.kind));
  const order = new Map(operations.map((o, i) => [o, i]));
  for (const kill of kills) {
    const cut = (a: Attempt) =>
      a.replica === kill.replica && a.status === 0 && a.error !== 'dropped by the client' && a.startedAt <= kill.at && a.endedAt >= kill.at;
    for (const killed of turns.filter((o) => o.attempts.some(cut))) {
      const admitted = turns
        .filter((o) => o.conversation === killed.conversation && order.get(o)! > order.get(killed)!)
        .flatMap((o) => o.attempts)
        .filter((a) => a.startedAt >= kill.at && ok(a))
        .sort((a, b) => a.startedAt - b.startedAt)[0];
      if (admitted) times.push(admitted.startedAt - kill.at);
    }
  }
  return times;
}

/** One line per violation, with the operations and their attempts that show it. */
export function formatViolations(violations: Violation[], operations: Operation[]): string {
  const byId = new Map(operations.map((o) => [o.id, o]));
  return violations
    .map((v) => {
      const shown = v.operations.map((id) => {
        const o = byId.get(id);
        const attempts = o?.attempts.map((a) => `r${a.replica} ${a.status || a.error} ${a.outcome ?? ''} ${a.endedAt - a.startedAt} ms`.trim()).join('; ');
        return `    ${id} (${o?.kind} #${o?.index} of ${o?.conversation}, "${o?.text}"): ${attempts}`;
      });
      return [`- ${v.rule}: ${v.detail}`, ...shown].join('\n');
    })
    .join('\n');
}
