import { Injectable } from '@nestjs/common';

export interface LoggedEvent {
  /** `{request seq}-{n}` */
  id: string;
  n: number;
  event: string;
  data: Record<string, unknown>;
}

export interface RequestEventLog {
  readonly seq: number;
  readonly events: LoggedEvent[];
  /** The next event's n. */
  next: number;
  done: boolean;
  /** The outcome (`final-response` or `error`) was recorded since the log was last opened. */
  final: boolean;
  readonly listeners: Set<(e: LoggedEvent | undefined) => void>;
}

/** Requests whose streams are kept for replay, per process (least recently opened dropped first). */
const MAX_LOGS = 1000;
/** Events kept per request: a longer stream replays its tail only (and always its final event). */
const MAX_EVENTS = 5000;

/**
 * The events of the v3 requests this process ran or watched, one log per request: every v3 stream
 * (POST /sse, a resume stream, a queued request's stream, a reconnect) reads from here, so ids are
 * assigned in one place and a client that reconnects with `Last-Event-ID` gets exactly the events
 * it missed, then the rest live. Kept in memory on purpose: persisting every text delta would cost
 * a store write per token. A reconnect that reaches another replica gets the outcome from the
 * store instead (see TaskStreamReplay). Bounded: MAX_LOGS logs of at most MAX_EVENTS events.
 */
@Injectable()
export class TaskEventLog {
  private readonly logs = new Map<string, RequestEventLog>();

  /**
   * The log of request `seq`, continued when it exists (a resumed request goes on in the log of
   * its first stream), its ids from at least `startAt` (so they stay monotonic across replicas).
   */
  open(tenantId: string, taskId: string, seq: number, startAt = 0): RequestEventLog {
    const key = keyOf(tenantId, taskId, seq);
    const existing = this.logs.get(key);
    const log: RequestEventLog = existing ?? { seq, events: [], next: 0, done: false, final: false, listeners: new Set() };
    log.done = false;
    log.final = false;
    log.next = Math.max(log.next, startAt);
    this.logs.delete(key);
    this.logs.set(key, log);
    while (this.logs.size > MAX_LOGS) {
      const oldest = this.logs.keys().next().value!;
      this.close(this.logs.get(oldest)!);
      this.logs.delete(oldest);
    }
    return log;
  }

  get(tenantId: string, taskId: string, seq: number): RequestEventLog | undefined {
    return this.logs.get(keyOf(tenantId, taskId, seq));
  }

  /** Drops (and closes) every log of a task: it was deleted. Scans at most MAX_LOGS logs. */
  forget(tenantId: string, taskId: string): void {
    const prefix = `${tenantId}\u0000${taskId}\u0000`;
    for (const [key, log] of [...this.logs]) {
      if (!key.startsWith(prefix)) continue;
      this.close(log);
      this.logs.delete(key);
    }
  }

  append(log: RequestEventLog, event: string, data: Record<string, unknown>): LoggedEvent {
    const n = log.next++;
    const e: LoggedEvent = { id: `${log.seq}-${n}`, n, event, data };
    log.events.push(e);
    if (event === 'final-response' || event === 'error') log.final = true;
    if (log.events.length > MAX_EVENTS) log.events.splice(0, log.events.length - MAX_EVENTS);
    for (const l of log.listeners) l(e);
    return e;
  }

  close(log: RequestEventLog): void {
    log.done = true;
    for (const l of log.listeners) l(undefined);
    log.listeners.clear();
  }

  /** Sends the events after `after`, then the rest live; resolves when the log closes or `signal` aborts. */
  follow(log: RequestEventLog, after: number, send: (e: LoggedEvent) => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let last = after;
      const forward = (e: LoggedEvent) => {
        if (e.n <= last) return;
        last = e.n;
        send(e);
      };
      for (const e of [...log.events]) forward(e);
      if (log.done || signal.aborted) return resolve();
      const listener = (e: LoggedEvent | undefined) => {
        if (e) return forward(e);
        log.listeners.delete(listener);
        resolve();
      };
      log.listeners.add(listener);
      signal.addEventListener('abort', () => {
        log.listeners.delete(listener);
        resolve();
      });
    });
  }
}

function keyOf(tenantId: string, taskId: string, seq: number): string {
  return `${tenantId}\u0000${taskId}\u0000${seq}`;
}
