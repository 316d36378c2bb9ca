import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DROP, HOT_PAIR, MAX_ATTEMPTS, pick, rand, REQUEST_TIMEOUT_MS, SEED } from './soak-config';
import { Attempt, Operation } from './soak-checker';
import type { Replica } from './soak-fleet';

/**
 * The clients: what they send, and everything they saw (`operations`, the checker's input). Each
 * conversation is owned by one client and has one turn at a time (or a pair at once: contention).
 */
export class SoakClients {
  readonly operations: Operation[] = [];
  /** Each conversation's task, once an answer named it. */
  readonly taskOf = new Map<string, string>();
  private readonly turnsOf = new Map<string, number>();

  constructor(private readonly replicas: Replica[]) {}

  /** One client: turns on its own conversations until the deadline. */
  async run(mine: string[], deadline: number): Promise<void> {
    while (Date.now() < deadline) await this.turn(pick(mine));
  }

  /** One attempt of a turn on one replica: what the client saw. */
  private async attempt(replica: Replica, op: Operation, key: string, body: object): Promise<Attempt> {
    const begun = Date.now();
    try {
      const res = await fetch(`http://127.0.0.1:${replica.port}/Soak/1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-dev-user': op.user },
        body: JSON.stringify(body),
        // Now and then the client gives up a few ms in (its answer lost): it sends the turn again.
        signal: AbortSignal.timeout(rand() < DROP ? 2 + Math.floor(rand() * 40) : REQUEST_TIMEOUT_MS),
      });
      const json = (await res.json().catch(() => ({}))) as { task_id?: string; status?: unknown; code?: string };
      // A StateResponse's status (Completed…), or a problem's code (its `status` is the HTTP one).
      const outcome = typeof json.status === 'string' ? json.status : json.code;
      return { replica: replica.index, startedAt: begun, endedAt: Date.now(), status: res.status, taskId: json.task_id, outcome };
    } catch (err) {
      const error = (err as Error).name === 'TimeoutError' ? 'dropped by the client' : (err as Error).message;
      return { replica: replica.index, startedAt: begun, endedAt: Date.now(), status: 0, error };
    }
  }

  /**
   * A turn: sent to a random replica, retried with the same key on another while no answer comes,
   * or the task is busy. Now and then (HOT_PAIR) two turns at once on the same task: both must land,
   * once each, in either order (they share an index: the checker does not order them).
   */
  private async turn(conversation: string): Promise<void> {
    const index = this.turnsOf.get(conversation) ?? 0;
    this.turnsOf.set(conversation, index + 1);
    if (index > 0 && this.taskOf.has(conversation) && rand() < HOT_PAIR) {
      await Promise.all([this.send(conversation, index, 'a'), this.send(conversation, index, 'b')]);
      return;
    }
    await this.send(conversation, index, '');
  }

  private async send(conversation: string, index: number, part: string): Promise<void> {
    const op: Operation = {
      id: `op-${this.operations.length}`,
      conversation,
      user: `user-${conversation}`,
      kind: index === 0 ? 'first' : 'follow-on',
      text: `soak ${SEED} ${conversation} turn ${index}${part}`,
      index,
      attempts: [],
    };
    this.operations.push(op);
    const key = randomUUID();
    // One body for every attempt: a retry under the key must be the same request (else 422 IDEMPOTENCY_KEY_REUSED).
    const taskId = this.taskOf.get(conversation);
    const body = { items: [{ content_type: 'text', content: op.text }], ...(taskId ? { task_id: taskId } : {}) };
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const a = await this.attempt(pick(this.replicas), op, key, body);
      op.attempts.push(a);
      if (a.taskId && !this.taskOf.has(conversation)) this.taskOf.set(conversation, a.taskId);
      // No answer (a replica killed or down), or the task held by a request that has not ended yet: again, elsewhere.
      if (a.status === 0 || a.status === 409 || a.status === 503) {
        await sleep(200 + Math.floor(rand() * 300));
        continue;
      }
      return;
    }
  }
}
