import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DROP, HOT_PAIR, MAX_ATTEMPTS, pick, rand, REQUEST_TIMEOUT_MS, SEED } from './soak-config';
import { getSse, openSse, parseSse, SseReader } from '../../test/support/sse-reader';
import { Attempt, Decision, Operation, StoredRequest, userTextOf } from './soak-checker';
import { APPROVAL_TTL_SECONDS, Replica } from './soak-fleet';

/** Of the turns sent alone: the share that asks for the tool that runs at once, and for the one that waits for approval. */
const TOOL_TURN = 0.1;
const GUARDED_TURN = 0.06;
/** How a paused turn is decided: the chances of letting it expire and of rejecting it (else approved), and of then sending the decision again (stale). */
const EXPIRE = 0.2;
const REJECT = 0.3;
const STALE_RETRY = 0.3;
/** Of a conversation's steps once it has a task: the chances of a cancel (of a slow turn sent for it), an edit, a fork, a delete. */
const CANCEL = 0.04;
const EDIT = 0.04;
const FORK = 0.03;
const DELETE = 0.015;
/** The chance of a streamed turn (POST /sse), and that a connection of it is dropped after 1 to 3 events (then reattached on another replica). */
const STREAM = 0.06;
const STREAM_CUT = 0.7;
/** Connections of one streamed turn at most (the POST and its reattaches). */
const STREAM_CONNECTIONS = 6;
/** Every QUEUE_EVERY-th conversation is on the agent that queues a follow-on while its task is busy (`SoakQueue`). */
const QUEUE_EVERY = 4;
/** The chance that a follow-on on the queueing agent is sent as a pair at once. */
const HOT_QUEUE_PAIR = 0.3;
/** How long a client waits for a queued turn to end before its next step (polls 0.2 s apart). */
const QUEUED_WAIT_POLLS = 150;
/** How many of a conversation's latest completed requests the client remembers (what it edits or forks). */
const REMEMBERED = 8;

/** What a JSON answer may carry that the clients read. */
interface Answer {
  task_id?: string;
  request_id?: string;
  status?: unknown;
  code?: string;
  content?: { pause_id?: string; tool_calls?: { id: string }[] };
  /** A fork's 201: the new task's requests. */
  requests?: StoredRequest[];
}

/**
 * The clients: what they send, and everything they saw (`operations`, the checker's input). Each
 * conversation is owned by one client and has one turn at a time (or a pair at once: contention).
 */
export class SoakClients {
  readonly operations: Operation[] = [];
  /** Each conversation's task, once an answer named it. */
  readonly taskOf = new Map<string, string>();
  /** Every conversation a client used: a deleted task's conversation goes on under a new name (`c7.1`), with a new task. */
  readonly conversations: string[] = [];
  /** The forks made (their tasks are read at the end). */
  readonly forks: { op: Operation; taskId: string }[] = [];
  private readonly turnsOf = new Map<string, number>();
  private readonly current = new Map<string, string>();
  private readonly completedOf = new Map<string, { requestId: string }[]>();
  /** Per client (keyed by its first conversation): the conversation to step on next, after an abandoned turn. */
  private readonly again = new Map<string, string>();
  /** Each base conversation's client (its first conversation). */
  private readonly clientOf = new Map<string, string>();

  constructor(private readonly replicas: Replica[]) {}

  /** One client: steps on its own conversations until the deadline. */
  async run(mine: string[], deadline: number): Promise<void> {
    for (const c of mine) {
      this.current.set(c, c);
      this.clientOf.set(c, mine[0]!);
      this.conversations.push(c);
    }
    while (Date.now() < deadline) {
      // A turn its replica abandoned (killed under it) is followed at once by another on the same
      // conversation, as a user sends the message again: the report times when its task is free.
      const again = this.again.get(mine[0]!);
      this.again.delete(mine[0]!);
      if (again) await this.turn(this.current.get(again)!);
      else await this.step(pick(mine));
    }
  }

  /** A step on one conversation: mostly a turn; once it has a task, now and then a cancel, an edit, a fork or a delete. */
  private async step(base: string): Promise<void> {
    const conversation = this.current.get(base)!;
    const taskId = this.taskOf.get(conversation);
    const done = this.completedOf.get(conversation) ?? [];
    const roll = rand();
    if (taskId && roll < CANCEL) return this.cancelTurn(conversation, taskId);
    if (taskId && done.length && roll < CANCEL + EDIT) return this.edit(conversation, taskId, pick(done).requestId);
    if (taskId && done.length && roll < CANCEL + EDIT + FORK) return this.fork(conversation, taskId, pick(done).requestId);
    if (taskId && roll > 1 - STREAM) return this.streamTurn(conversation, taskId);
    if (taskId && roll < CANCEL + EDIT + FORK + DELETE) {
      await this.remove(conversation, taskId);
      // Whatever the DELETE answered, the conversation goes on afresh (the checker judges the old one by its read).
      const next = `${base}.${this.conversations.filter((c) => c === base || c.startsWith(`${base}.`)).length}`;
      this.current.set(base, next);
      this.conversations.push(next);
      return;
    }
    return this.turn(conversation);
  }

  private newOp(conversation: string, kind: Operation['kind'], text: string, index: number): Operation {
    const op: Operation = { id: `op-${this.operations.length}`, conversation, user: `user-${conversation}`, kind, text, index, attempts: [] };
    this.operations.push(op);
    return op;
  }

  /** A completed request the client may edit or fork later (the latest REMEMBERED). */
  private remember(conversation: string, attempts: Attempt[]): void {
    const done = attempts.find((a) => a.status === 200 && a.outcome === 'Completed' && a.requestId);
    if (done) this.rememberRequest(conversation, done.requestId!);
  }

  private rememberRequest(conversation: string, requestId: string): void {
    const list = [...(this.completedOf.get(conversation) ?? []), { requestId }];
    this.completedOf.set(conversation, list.slice(-REMEMBERED));
  }

  /**
   * A streamed turn (`POST /sse`, its model answer streamed in pieces), read over connections that
   * the client drops after a few events and reattaches (`GET /tasks/{id}/stream` with
   * `Last-Event-ID`) on another replica, until the final event (or 204: nothing after the last id
   * seen). Every event seen is recorded for the checker, with its connection.
   */
  private async streamTurn(conversation: string, taskId: string): Promise<void> {
    const index = this.nextIndex(conversation);
    const op = this.newOp(conversation, 'follow-on', `soak ${SEED} ${conversation} turn ${index} [stream]`, index);
    op.events = [];
    const key = randomUUID();
    const body = { items: [{ content_type: 'text', content: op.text }], task_id: taskId };
    const base = (r: Replica) => `http://127.0.0.1:${r.port}/${agentOf(op.user)}`;
    let lastId: string | undefined;
    let previous: Replica | undefined;
    for (let connection = 0; connection < STREAM_CONNECTIONS; connection++) {
      // Another replica than the last connection's, when there is one.
      const replica = pick(this.replicas.length > 1 ? this.replicas.filter((r) => r !== previous) : this.replicas);
      previous = replica;
      const cut = connection < STREAM_CONNECTIONS - 1 && rand() < STREAM_CUT ? 1 + Math.floor(rand() * 3) : Infinity;
      const begun = Date.now();
      const headers = { 'x-dev-user': op.user, ...(lastId ? { 'last-event-id': lastId } : {}) };
      let reader: SseReader | undefined;
      try {
        // The first connection (and any before an event with an id) is the POST, retried under its key; then reattaches.
        reader = lastId
          ? await getSse(`${base(replica)}/tasks/${taskId}/stream`, headers)
          : await openSse(`${base(replica)}/sse`, body, { ...headers, 'idempotency-key': key });
      } catch (err) {
        op.attempts.push({ replica: replica.index, startedAt: begun, endedAt: Date.now(), status: 0, error: (err as Error).message });
        await sleep(200 + Math.floor(rand() * 300));
        continue;
      }
      const events = () => parseSse(reader!.text()).filter((e) => e.event !== undefined || e.id !== undefined);
      const ended = () => events().some((e) => e.event === 'final-response' || e.event === 'error');
      const timer = setTimeout(() => reader!.abort(), REQUEST_TIMEOUT_MS);
      await reader.readUntil(() => ended() || events().length >= cut).catch(() => undefined);
      clearTimeout(timer);
      reader.abort();
      // A chunk may hold more than `cut` events: all that arrived were seen.
      const got = events();
      for (const e of got) op.events.push({ id: e.id, event: e.event ?? 'message', connection });
      lastId = [...got].reverse().find((e) => e.id)?.id ?? lastId;
      const final = got.find((e) => e.event === 'final-response' || e.event === 'error');
      const data = final ? (JSON.parse(final.data || '{}') as Answer) : {};
      const outcome = final ? (final.event === 'error' ? data.code : typeof data.status === 'string' ? data.status : undefined) : undefined;
      op.attempts.push({ replica: replica.index, startedAt: begun, endedAt: Date.now(), status: reader.status, taskId, outcome, requestId: data.request_id });
      // Done: the final event seen, or 204 (the outcome was seen already), or refused (4xx), but for a
      // POST refused busy (409: the task held by a request not ended yet), sent again as any turn is.
      const busy = reader.status === 409 && !lastId;
      if (final || reader.status === 204 || (reader.status >= 400 && reader.status < 500 && !busy)) break;
      if (reader.status !== 200) await sleep(200 + Math.floor(rand() * 300));
    }
    this.remember(conversation, op.attempts);
  }

  /** A slow turn, and a cancel of the task sent while it runs: the request ends Canceled, or had completed first. */
  private async cancelTurn(conversation: string, taskId: string): Promise<void> {
    const index = this.nextIndex(conversation);
    const turn = this.newOp(conversation, 'follow-on', `soak ${SEED} ${conversation} turn ${index} [slow]`, index);
    const running = this.sendOp(turn);
    await sleep(200 + Math.floor(rand() * 400));
    const op = this.newOp(conversation, 'cancel', `soak ${SEED} ${conversation} cancel ${index}`, index);
    op.target = turn.id;
    await this.withRetries(op.attempts, 'POST', `/tasks/${taskId}/cancel`, op.user, undefined, false);
    await running;
  }

  /** An edit of a completed request: a new turn (its own text) replacing it and every later one. */
  private async edit(conversation: string, taskId: string, requestId: string): Promise<void> {
    const index = this.nextIndex(conversation);
    const op = this.newOp(conversation, 'edit', `soak ${SEED} ${conversation} turn ${index} edit`, index);
    op.target = requestId;
    await this.withRetries(
      op.attempts,
      'POST',
      `/tasks/${taskId}/requests/${requestId}/edit`,
      op.user,
      { items: [{ content_type: 'text', content: op.text }] },
      true,
    );
    const answer = op.attempts.find((a) => a.status === 200 && a.outcome === 'Completed');
    if (answer) {
      // The edited request and every later one are superseded: what the client may edit next is what came before, and the edit.
      const done = this.completedOf.get(conversation) ?? [];
      const at = done.findIndex((d) => d.requestId === requestId);
      this.completedOf.set(conversation, [...(at < 0 ? done : done.slice(0, at)), { requestId: answer.requestId! }]);
    }
  }

  /** A fork up to a completed request: a new task (read at the end) holding the turns up to it. */
  private async fork(conversation: string, taskId: string, requestId: string): Promise<void> {
    const op = this.newOp(conversation, 'fork', `soak ${SEED} ${conversation} fork ${this.operations.length}`, this.turnsOf.get(conversation) ?? 0);
    op.target = requestId;
    const json = await this.withRetries(op.attempts, 'POST', `/tasks/${taskId}/fork`, op.user, { request_id: requestId }, false);
    const made = op.attempts.find((a) => a.status === 201);
    if (made?.taskId) {
      op.forkTexts = (json.requests ?? []).sort((a, b) => a.seq - b.seq).map((r) => userTextOf(r) ?? '');
      this.forks.push({ op, taskId: made.taskId });
    }
  }

  private async remove(conversation: string, taskId: string): Promise<void> {
    const op = this.newOp(conversation, 'delete', `soak ${SEED} ${conversation} delete`, this.turnsOf.get(conversation) ?? 0);
    await this.withRetries(op.attempts, 'DELETE', `/tasks/${taskId}`, op.user, undefined, false);
  }

  private nextIndex(conversation: string): number {
    const index = this.turnsOf.get(conversation) ?? 0;
    this.turnsOf.set(conversation, index + 1);
    return index;
  }

  /** One attempt of a request on one replica: what the client saw, and the JSON answer. */
  private async attempt(replica: Replica, method: string, path: string, user: string, key: string, body?: object): Promise<[Attempt, Answer]> {
    const begun = Date.now();
    try {
      const res = await fetch(`http://127.0.0.1:${replica.port}/${agentOf(user)}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-dev-user': user },
        body: body ? JSON.stringify(body) : undefined,
        // Now and then the client gives up a few ms in (its answer lost): it sends the request again.
        signal: AbortSignal.timeout(rand() < DROP ? 2 + Math.floor(rand() * 40) : REQUEST_TIMEOUT_MS),
      });
      const json = (await res.json().catch(() => ({}))) as Answer;
      // A StateResponse's status (Completed…), or a problem's code (its `status` is the HTTP one).
      const outcome = typeof json.status === 'string' ? json.status : json.code;
      const a: Attempt = { replica: replica.index, startedAt: begun, endedAt: Date.now(), status: res.status, taskId: json.task_id, outcome };
      if (json.request_id) a.requestId = json.request_id;
      if (outcome === 'Paused' && json.content?.pause_id) {
        a.pauseId = json.content.pause_id;
        a.callIds = (json.content.tool_calls ?? []).map((c) => c.id);
      }
      return [a, json];
    } catch (err) {
      const error = (err as Error).name === 'TimeoutError' ? 'dropped by the client' : (err as Error).message;
      return [{ replica: replica.index, startedAt: begun, endedAt: Date.now(), status: 0, error }, {}];
    }
  }

  /**
   * A request sent to a random replica and sent again, with the same key and body, to a random
   * replica while no answer comes (a replica killed or down) or 503 but ABANDONED (or 409 when `busyAgain`: the
   * task held by a request that has not ended yet); at most MAX_ATTEMPTS times.
   */
  private async withRetries(attempts: Attempt[], method: string, path: string, user: string, body: object | undefined, busyAgain: boolean): Promise<Answer> {
    const key = randomUUID();
    let json: Answer = {};
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const [a, answer] = await this.attempt(pick(this.replicas), method, path, user, key, body);
      attempts.push(a);
      json = answer;
      // 503 ABANDONED is an answer (the request's replica died under it: it will not run), not a refusal to retry.
      if (a.status === 0 || (a.status === 503 && a.outcome !== 'ABANDONED') || (busyAgain && a.status === 409)) {
        await sleep(200 + Math.floor(rand() * 300));
        continue;
      }
      break;
    }
    return json;
  }

  /**
   * A turn: now and then (HOT_PAIR) two turns at once on the same task: both must land, once each,
   * in either order (they share an index: the checker does not order them). A turn sent alone may
   * ask for a tool (TOOL_TURN), or for one that waits for approval (GUARDED_TURN), then decided.
   */
  private async turn(conversation: string): Promise<void> {
    const index = this.nextIndex(conversation);
    // The queueing agent's tasks are the hot ones: more pairs, so that one of them waits its turn (202 Queued).
    const hot = agentOf(`user-${conversation}`) === 'SoakQueue/1' ? HOT_QUEUE_PAIR : HOT_PAIR;
    if (index > 0 && this.taskOf.has(conversation) && rand() < hot) {
      await Promise.all([this.send(conversation, index, 'a'), this.send(conversation, index, 'b')]);
      return;
    }
    const roll = rand();
    await this.send(conversation, index, roll < TOOL_TURN ? ' [tool:count]' : roll < TOOL_TURN + GUARDED_TURN ? ' [tool:guarded]' : '');
  }

  private send(conversation: string, index: number, part: string): Promise<void> {
    return this.sendOp(this.newOp(conversation, index === 0 ? 'first' : 'follow-on', `soak ${SEED} ${conversation} turn ${index}${part}`, index));
  }

  private async sendOp(op: Operation): Promise<void> {
    const { conversation } = op;
    // One body for every attempt: a retry under the key must be the same request (else 422 IDEMPOTENCY_KEY_REUSED).
    const taskId = this.taskOf.get(conversation);
    const body = { items: [{ content_type: 'text', content: op.text }], ...(taskId ? { task_id: taskId } : {}) };
    await this.withRetries(op.attempts, 'POST', '', op.user, body, true);
    const named = op.attempts.find((a) => a.taskId);
    if (named && !this.taskOf.has(conversation)) this.taskOf.set(conversation, named.taskId!);
    this.remember(conversation, op.attempts);
    const base = conversation.split('.')[0]!;
    if (op.attempts.at(-1)?.outcome === 'ABANDONED') this.again.set(this.clientOf.get(base)!, base);
    const queued = op.attempts.find((a) => a.status === 202 && a.outcome === 'Queued' && a.requestId && a.taskId);
    if (queued) await this.awaitQueued(op, queued.taskId!, queued.requestId!);
    const paused = op.attempts.at(-1);
    if (paused?.pauseId && paused.requestId) await this.decide(op, paused.requestId, paused.pauseId, paused.callIds ?? []);
  }

  /**
   * A turn answered 202 Queued runs once the request ahead of it ends: its client waits for that
   * (reading the task) before its next step on the conversation, which would otherwise supersede it.
   */
  private async awaitQueued(op: Operation, taskId: string, requestId: string): Promise<void> {
    for (let i = 0; i < QUEUED_WAIT_POLLS; i++) {
      await sleep(200);
      const r = pick(this.replicas.filter((x) => x.up));
      if (!r) continue;
      const res = await fetch(`http://127.0.0.1:${r.port}/${agentOf(op.user)}/tasks/${taskId}`, { headers: { 'x-dev-user': op.user } }).catch(() => undefined);
      if (res?.status !== 200) {
        await res?.arrayBuffer();
        continue;
      }
      const task = (await res.json()) as { requests: StoredRequest[] };
      const request = task.requests.find((q) => q.request_id === requestId);
      if (request && !['Queued', 'Running'].includes(request.status)) {
        if (request.status === 'Completed') this.rememberRequest(op.conversation, requestId);
        return;
      }
    }
  }

  /**
   * Decides a paused turn: approve, reject, or wait past the TTL and approve (it must be 409
   * APPROVAL_EXPIRED); after a decision that was answered, now and then the same decision again
   * under a new key (stale: it must be 409, and run nothing).
   */
  private async decide(op: Operation, requestId: string, pauseId: string, callIds: string[]): Promise<void> {
    op.decisions = [];
    const roll = rand();
    const kind: Decision['kind'] = roll < EXPIRE ? 'expire' : roll < EXPIRE + REJECT ? 'reject' : 'approve';
    if (kind === 'expire') await sleep(APPROVAL_TTL_SECONDS * 1000 + 1_500);
    const body = { action: kind === 'reject' ? 'reject' : 'approve', pause_id: pauseId };
    const path = `/tealagents/v1alpha1/resume/${requestId}`;
    const decision: Decision = { kind, requestId, pauseId, callIds, attempts: [] };
    op.decisions.push(decision);
    await this.withRetries(decision.attempts, 'POST', path, op.user, body, false);
    this.remember(op.conversation, decision.attempts);
    if (kind !== 'expire' && decision.attempts.some((a) => a.status >= 200 && a.status < 300) && rand() < STALE_RETRY) {
      const stale: Decision = { kind: 'stale', requestId, pauseId, callIds, attempts: [] };
      op.decisions.push(stale);
      await this.withRetries(stale.attempts, 'POST', path, op.user, body, false);
    }
  }
}

/** The agent a conversation's user talks to: `Soak/1`, or `SoakQueue/1` for every QUEUE_EVERY-th conversation (`user-c7`, `user-c7.1`…). */
export function agentOf(user: string): string {
  const n = Number(/^user-c(\d+)/.exec(user)?.[1] ?? 0);
  return n % QUEUE_EVERY === QUEUE_EVERY - 1 ? 'SoakQueue/1' : 'Soak/1';
}
