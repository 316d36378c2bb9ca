import { Injectable } from '@nestjs/common';

export interface LoggedEvent {
  /** `{request seq}-{n}` */
  id: string;
  n: number;
  event: string;
  data: Record<string, unknown>;
}

export interface RequestEventLog {
  readonly events: LoggedEvent[];
  done: boolean;
  readonly listeners: Set<(e: LoggedEvent | undefined) => void>;
}

/** Requests whose streams are kept for replay, per process (oldest dropped first). */
const MAX_LOGS = 1000;
/** Events kept per request: a longer stream replays its tail only (and always its final event). */
const MAX_EVENTS = 5000;

/**
 * The events of the recent v3 streams this process served, so a client that reconnects with
 * `Last-Event-ID` gets exactly the events it missed (and the rest live while the request still
 * runs). Kept in memory on purpose: persisting every text delta would cost a store write per token.
 * A reconnect that reaches another replica gets the outcome from the store instead (see
 * TaskStreamReplay).
 */
@Injectable()
export class TaskEventLog {
  private readonly logs = new Map<string, RequestEventLog>();

  open(tenantId: string, taskId: string, seq: number): RequestEventLog {
    const key = keyOf(tenantId, taskId, seq);
    const log: RequestEventLog = { events: [], done: false, listeners: new Set() };
    this.logs.delete(key);
    this.logs.set(key, log);
    while (this.logs.size > MAX_LOGS) this.logs.delete(this.logs.keys().next().value!);
    return log;
  }

  get(tenantId: string, taskId: string, seq: number): RequestEventLog | undefined {
    return this.logs.get(keyOf(tenantId, taskId, seq));
  }

  append(log: RequestEventLog, event: LoggedEvent): void {
    log.events.push(event);
    if (log.events.length > MAX_EVENTS) log.events.splice(0, log.events.length - MAX_EVENTS);
    for (const l of log.listeners) l(event);
  }

  close(log: RequestEventLog): void {
    log.done = true;
    for (const l of log.listeners) l(undefined);
    log.listeners.clear();
  }
}

function keyOf(tenantId: string, taskId: string, seq: number): string {
  return `${tenantId}\u0000${taskId}\u0000${seq}`;
}
