import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ENV_CONFIG, LOGGER } from '../../app.tokens';
import type { EnvConfig } from '../../config/env.config';
import { StateStore, StreamEvent } from '../../state/state-store';
import { StateStoreUnavailableError } from '../../state/state.errors';
import { PollBackoff } from '../run/poll-backoff';
import { eventSize, type LoggedEvent } from './task-event-log.service';
import { TaskReaderService } from '../writer/task-reader.service';

/** A batch is written this long after its first event, unless it fills or ends first. */
export const FLUSH_MS = 100;
/** Events per write (a full batch is written at once). */
export const FLUSH_EVENTS = 50;
/** Events kept per request in the store, as in the per-process log (task-event-log.service.ts). */
export const MAX_STORED_EVENTS = 5000;

/** A write the store did not answer is retried (backing off from RETRY_MIN_MS to RETRY_MAX_MS) for this long, then the log stops. */
export const WRITE_RETRY_MS = 10_000;
const RETRY_MIN_MS = 50;
export const RETRY_MAX_MS = 1_000;

/** The two events that end a request's stream: always stored, whatever the bounds. */
export const isFinalEvent = (event: string) => event === 'final-response' || event === 'error';

/**
 * Writes the events of the requests this replica runs through the state store (the stream log,
 * StateStore.appendStreamEvents), so a client reattaching on another replica gets exactly what it
 * missed. Batched, so a turn costs a store write per FLUSH_MS (or FLUSH_EVENTS events), not per
 * token; the final event is written at once.
 *
 * Bounded: at most `TA_STREAM_LOG_MAX_BYTES` of event data and MAX_STORED_EVENTS events per request
 * (the store keeps one request per task, so this is also the bound per task). Past the bound only
 * the final event is stored: a reattach elsewhere then sees a gap and gets the outcome. Never fails
 * the request: a write the store does not answer (a stall) is retried for up to WRITE_RETRY_MS, in
 * order (the later batches wait behind it), so a follower elsewhere gets every event once the store
 * is back; a write that still fails is logged once and the request's log stops there (a reattach
 * elsewhere then gets the outcome from the request record, src/tasks/events/stream-outcome.ts).
 */
@Injectable()
export class StreamEventWriterService {
  constructor(
    private readonly store: StateStore,
    private readonly reader: TaskReaderService,
    @Inject(ENV_CONFIG) private readonly env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** A recorder for the events of request `seq` (`requestId`) of a task. */
  open(tenantId: string, taskId: string, seq: number, requestId: string): StreamRecorder {
    return new StreamRecorder(this.store, this.logger, { tenantId, taskId, seq, requestId }, this.env.http.streamLogMaxBytes);
  }

  /** The last id stored for request `seq` of a task past `after`; undefined when none is, or the log cannot be read. */
  async lastStoredId(tenantId: string, taskId: string, seq: number, after: number): Promise<number | undefined> {
    const stored = await this.reader.streamEvents({ tenantId, taskId }, seq, after).catch(() => undefined);
    return stored?.at(-1)?.n;
  }
}

export class StreamRecorder {
  private pending: StreamEvent[] = [];
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private bytes = 0;
  private count = 0;
  private failed = false;

  constructor(
    private readonly store: StateStore,
    private readonly logger: Logger,
    private readonly target: { tenantId: string; taskId: string; seq: number; requestId: string },
    private readonly maxBytes: number,
  ) {}

  /** Records one event (synchronously; the write happens later). Returns the event. */
  add(e: LoggedEvent): LoggedEvent {
    if (this.failed || this.maxBytes <= 0) return e;
    const final = isFinalEvent(e.event);
    const size = e.size ?? eventSize(e.event, JSON.stringify(e.data));
    if (!final && (this.bytes + size > this.maxBytes || this.count >= MAX_STORED_EVENTS)) return e;
    this.bytes += size;
    this.count++;
    this.pending.push({ n: e.n, event: e.event, data: e.data });
    if (final || this.pending.length >= FLUSH_EVENTS) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
    return e;
  }

  /** Writes what is pending now; resolves when every write so far is done (never rejects). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: StreamEvent[]): Promise<void> {
    if (this.failed) return;
    const { tenantId, taskId, seq, requestId } = this.target;
    const backoff = new PollBackoff(RETRY_MIN_MS, RETRY_MAX_MS);
    const started = Date.now();
    for (;;) {
      try {
        // Named, so the store refuses the events once the task holds another request there (a re-created task).
        // A retry of an append that did apply stores nothing twice (the store skips an n not above its last).
        await this.store.appendStreamEvents(tenantId, taskId, seq, batch, requestId);
        return;
      } catch (err) {
        if (!(err instanceof StateStoreUnavailableError) || Date.now() - started >= WRITE_RETRY_MS) {
          this.failed = true;
          this.logger.warn({ err, task_id: taskId, seq }, 'writing stream events to the store failed; a reattach on another replica gets the outcome only');
          return;
        }
        await sleep(backoff.next());
      }
    }
  }
}
