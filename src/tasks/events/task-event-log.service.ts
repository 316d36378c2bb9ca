import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { ENV_CONFIG } from '../../app.tokens';
import type { EnvConfig } from '../../config/env.config';

export interface LoggedEvent {
  /** `{request seq}-{n}` */
  id: string;
  n: number;
  event: string;
  data: Record<string, unknown>;
  /** UTF-8 bytes of the event name and its data as JSON (measured once, when logged). */
  size?: number;
  /**
   * The data as JSON, made to measure the event, while it is handed to the followers listening when
   * it is logged (the stream sends it as it is); not kept after that (a replay serializes again),
   * so a log holds each event's data once.
   */
  json?: string;
}

/** An event's `size`: the UTF-8 bytes of its name and of its data's JSON. */
export function eventSize(event: string, json: string): number {
  return Buffer.byteLength(json) + event.length;
}

export interface RequestEventLog {
  /** Where this service keeps it (tenant, task and seq): the log's own, so finding it needs no lookup. */
  readonly key: string;
  readonly seq: number;
  readonly events: LoggedEvent[];
  /** The next event's n. */
  next: number;
  done: boolean;
  /** The outcome (`final-response` or `error`) was recorded since the log was last opened. */
  final: boolean;
  /** The highest n dropped from `events` by the bounds (-1: none): a replay from before it would have holes. */
  dropped: number;
  /** What `events` count against the byte bounds. */
  bytes: number;
  /** Filled from the store (a request running on another replica), not by a run here: see ReplayAdmissionService. */
  remote: boolean;
  readonly listeners: Set<(e: LoggedEvent | undefined) => void>;
}

/** Requests whose streams are kept for replay, per process (least recently opened dropped first). */
const MAX_LOGS = 1000;
/** Events kept per request: a longer stream keeps its tail only (and always its final event). */
const MAX_EVENTS = 5000;
/** What an event costs beyond its JSON (the object, its id string): counted so tiny deltas are not free. */
const EVENT_OVERHEAD = 96;
/** The longest pause between two sweeps of expired logs. */
const MAX_SWEEP_MS = 60_000;
/** What a replay that cannot be exact sends: the request's outcome, as the store fallback does. */
const OUTCOME_EVENTS = new Set(['approval-required', 'cancelled', 'final-response', 'error']);

interface Entry {
  readonly key: string;
  readonly log: RequestEventLog;
}

/**
 * The events of the v3 requests this process ran or watched, one log per request: every v3 stream
 * (POST /sse, a resume stream, a queued request's stream, a reconnect) reads from here, so ids are
 * assigned in one place and a client that reconnects with `Last-Event-ID` gets exactly the events
 * it missed, then the rest live. Kept in memory on purpose: persisting every text delta would cost
 * a store write per token. A reconnect that reaches another replica is served from the store's
 * stream log instead (see TaskStreamAttachService).
 *
 * Bounded in bytes and in time (docs/configuration.md), since a finished 2 MiB answer would
 * otherwise stay on the heap until a thousand newer requests push it out:
 * - per stream, TA_STREAM_REPLAY_STREAM_MAX_BYTES: past it, the oldest events are dropped (the
 *   tail is what a client that lost its connection a moment ago needs), never the last one;
 * - per process, TA_STREAM_REPLAY_MAX_BYTES: past it, finished logs go first (oldest finished
 *   first, whole: the store has their outcome), then running logs lose their oldest events;
 * - a finished log expires TA_STREAM_REPLAY_TTL_SECONDS after its final event, and with its task.
 * A replay from an id in a dropped part sends the outcome events only (`follow`), and a dropped log
 * sends the caller to the store's outcome: never a replay with holes that looks complete.
 */
@Injectable()
export class TaskEventLogService implements OnModuleDestroy {
  private readonly logs = new Map<string, Entry>();
  /** Keys of finished logs → when they finished, oldest first (evicted and expired from the head). */
  private readonly finished = new Map<string, number>();
  private total = 0;
  private readonly maxBytes: number;
  private readonly streamMaxBytes: number;
  private readonly ttlMs: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(@Inject(ENV_CONFIG) env: EnvConfig) {
    ({ maxBytes: this.maxBytes, streamMaxBytes: this.streamMaxBytes } = env.http.streamReplay);
    this.ttlMs = env.http.streamReplay.ttlSeconds * 1000;
    // unref'd: a sweep never keeps the process alive; each one stops at the first unexpired log.
    this.sweeper = setInterval(() => this.sweep(), Math.min(this.ttlMs, MAX_SWEEP_MS)).unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  /**
   * The log of request `seq`, continued when it exists (a resumed request goes on in the log of
   * its first stream), its ids from at least `startAt` (so they stay monotonic across replicas).
   */
  open(tenantId: string, taskId: string, seq: number, startAt = 0, remote = false): RequestEventLog {
    this.sweep();
    const key = keyOf(tenantId, taskId, seq);
    const entry = this.logs.get(key) ?? {
      key,
      log: { key, seq, events: [], next: 0, done: false, final: false, dropped: -1, bytes: 0, remote, listeners: new Set() },
    };
    const { log } = entry;
    log.done = false;
    log.final = false;
    log.remote = remote;
    log.next = Math.max(log.next, startAt);
    this.finished.delete(key);
    this.logs.delete(key);
    this.logs.set(key, entry);
    while (this.logs.size > MAX_LOGS) this.drop(this.logs.keys().next().value!);
    return log;
  }

  get(tenantId: string, taskId: string, seq: number): RequestEventLog | undefined {
    this.sweep();
    return this.logs.get(keyOf(tenantId, taskId, seq))?.log;
  }

  /** Drops (and closes) every log of a task: it was deleted. Scans at most MAX_LOGS logs. */
  forget(tenantId: string, taskId: string): void {
    const prefix = `${tenantId}\u0000${taskId}\u0000`;
    for (const key of [...this.logs.keys()]) if (key.startsWith(prefix)) this.drop(key);
  }

  /** Drops `log` (if this process still keeps it), as when nobody follows a log filled from the store any more. */
  discard(log: RequestEventLog): void {
    if (this.held(log)) this.drop(log.key);
    else this.close(log);
  }

  /** `json`: `data` as JSON, when the caller already made it. */
  append(log: RequestEventLog, event: string, data: Record<string, unknown>, json = JSON.stringify(data)): LoggedEvent {
    const n = log.next++;
    const size = eventSize(event, json);
    const e: LoggedEvent = { id: `${log.seq}-${n}`, n, event, data, size, json };
    log.events.push(e);
    log.bytes += size + EVENT_OVERHEAD;
    if (this.held(log)) this.total += size + EVENT_OVERHEAD;
    if (event === 'final-response' || event === 'error') log.final = true;
    // Checked first: within the bounds (nearly always) no trimming closure is made at all.
    if (log.events.length > MAX_EVENTS || log.bytes > this.streamMaxBytes) {
      this.trim(log, (count, freed) => log.events.length - count > MAX_EVENTS || log.bytes - freed > this.streamMaxBytes);
    }
    if (this.total > this.maxBytes) this.enforceTotal();
    for (const l of log.listeners) l(e);
    e.json = undefined;
    return e;
  }

  close(log: RequestEventLog): void {
    log.done = true;
    for (const l of log.listeners) l(undefined);
    log.listeners.clear();
    const key = this.held(log) ? log.key : undefined;
    if (key === undefined) return;
    this.finished.delete(key);
    this.finished.set(key, Date.now());
    if (this.total > this.maxBytes) this.enforceTotal();
  }

  /**
   * Sends the events after `after`, then the rest live; resolves when the log closes or `signal`
   * aborts. When events after `after` were dropped (the bounds), the replay cannot be exact: only
   * the outcome events are sent (the request's final answer carries the whole result), as a
   * reconnect to another replica gets from the store.
   */
  follow(log: RequestEventLog, after: number, send: (e: LoggedEvent) => void, signal: AbortSignal): Promise<void> {
    const gapped = after < log.dropped;
    return new Promise<void>((resolve) => {
      let last = after;
      const forward = (e: LoggedEvent) => {
        if (e.n <= last) return;
        last = e.n;
        if (!gapped || OUTCOME_EVENTS.has(e.event)) send(e);
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

  /** Bytes held by every log of this process (what TA_STREAM_REPLAY_MAX_BYTES bounds). */
  get heldBytes(): number {
    return this.total;
  }

  /** Whether `log` is the one this process keeps (a dropped log may still be written by its run). */
  private held(log: RequestEventLog): boolean {
    return this.logs.get(log.key)?.log === log;
  }

  /** Drops the oldest events of `log` while `excess(events dropped, bytes freed)` holds, always keeping its last event. */
  private trim(log: RequestEventLog, excess: (count: number, freed: number) => boolean): void {
    let count = 0;
    let freed = 0;
    while (count < log.events.length - 1 && excess(count, freed)) freed += (log.events[count++]!.size ?? 0) + EVENT_OVERHEAD;
    if (!count) return;
    log.dropped = Math.max(log.dropped, log.events[count - 1]!.n);
    log.events.splice(0, count);
    log.bytes -= freed;
    if (this.held(log)) this.total -= freed;
  }

  /** Finished logs first (oldest finished first, whole), then the oldest events of running logs. */
  private enforceTotal(): void {
    while (this.total > this.maxBytes && this.finished.size) this.drop(this.finished.keys().next().value!);
    for (const { log } of this.logs.values()) {
      if (this.total <= this.maxBytes) return;
      this.trim(log, (_, freed) => this.total - freed > this.maxBytes);
    }
  }

  /** Expired finished logs, from the oldest: stops at the first that has not expired. */
  private sweep(now = Date.now()): void {
    for (const [key, finishedAt] of this.finished) {
      if (finishedAt + this.ttlMs > now) return;
      this.drop(key);
    }
  }

  private drop(key: string): void {
    const entry = this.logs.get(key);
    this.finished.delete(key);
    if (!entry) return;
    this.logs.delete(key);
    this.total -= entry.log.bytes;
    this.close(entry.log);
  }
}

function keyOf(tenantId: string, taskId: string, seq: number): string {
  return `${tenantId}\u0000${taskId}\u0000${seq}`;
}
