import { Inject, Injectable, Optional } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { LOGGER } from '../../app.tokens';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { ShutdownStateService } from '../../common/shutdown/shutdown-state.service';
import { StreamEvent } from '../../state/state-store';
import { StateStoreUnavailableError } from '../../state/state.errors';
import { leaseActive } from '../lifecycle/lease';
import { PollBackoff } from '../run/poll-backoff';
import { RequestWatcherService, WatchedRequest } from '../run/request-watcher.service';
import { isFinalEvent, RETRY_MAX_MS } from '../events/stream-event-writer.service';
import { errorEventData, FINAL_GRACE_MS, hasEnded, isOutcomeOf, OUTCOME_N, settled, synthesizedOutcome } from '../events/stream-outcome';
import { RequestEventLog, TaskEventLogService } from '../events/task-event-log.service';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';

/** How often the store's stream log is read while events arrive (a read that brings none doubles it). */
const POLL_MS = 100;
/** The longest wait between two reads while nothing arrives. */
const MAX_POLL_MS = 2_000;
/** How long a final event is waited for once the record is seen ended: FINAL_GRACE_MS, and the recorder's longest retry wait again. */
const SEEN_ENDED_GRACE_MS = FINAL_GRACE_MS + RETRY_MAX_MS;
/** How long the store may fail this follower's reads before it gives up (and ends its streams without an outcome). */
export const STORE_RETRY_MS = 10_000;

/**
 * Mirrors, into this replica's event log, the stream log another replica writes through the store
 * (src/tasks/events/stream-event-writer.service.ts): every stored event of request `seq` with its own id, read
 * every POLL_MS (backing off to MAX_POLL_MS while nothing arrives) until the event that ends the
 * request's stream (its final event, unless it is a pause since decided: the resume's events follow
 * it), so a stream reattached here sends exactly the events the client missed and then the rest as
 * they are stored. When the request ended and its final event is not stored (it was not streamed,
 * its replica died, or the writes failed), the outcome is sent from the request record with the ids
 * every replica gives it (src/tasks/events/stream-outcome.ts: after every id a client can have seen). The
 * watcher runs alongside for what it does for any watched request: recovering the task when the
 * replica running it died.
 *
 * The store failing is not the request failing: a read that fails is retried (as a poll that
 * brought nothing) for up to STORE_RETRY_MS; past that the log is dropped and its streams end with
 * no outcome event, which tells a client to reattach with its last id (docs/api.md). Never an
 * `error` event naming the request for a fault of this replica's own reads.
 *
 * Bounded: one mirror per request on this replica (concurrent reconnects share it), admitted per
 * caller and replica (ReplayAdmissionService), stopped once no stream follows it, and ended with the
 * outcome (or ABANDONED) when the request's lease lapsed and stayed lapsed for another lease length
 * with no new event: a replay never polls for a request nobody runs.
 */
@Injectable()
export class StoredStreamFollowerService {
  /** STORE_RETRY_MS (a field, so a spec can shorten it). */
  storeRetryMs = STORE_RETRY_MS;

  constructor(
    private readonly reader: TaskReaderService,
    private readonly events: TaskEventLogService,
    private readonly watcher: RequestWatcherService,
    private readonly writer: TaskWriterService,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() private readonly shutdown?: ShutdownStateService,
  ) {}

  /**
   * Opens the mirror log of request `seq` and fills it in the background from `first` (the stored
   * events of the request, all of them, as the caller read them) on.
   */
  open(agent: AgentDefinition, w: WatchedRequest, seq: number, first: StreamEvent[]): RequestEventLog {
    const shared = this.events.get(w.tenantId, w.taskId, seq); // a reconnect that came at the same time
    if (shared && !shared.done) return shared;
    if (shared) this.events.discard(shared); // ended here before, then resumed elsewhere: start afresh
    const log = this.events.open(w.tenantId, w.taskId, seq, 0, true);
    const stop = new AbortController();
    void this.watcher.watch(agent, w, undefined, stop.signal).catch(() => undefined);
    void this.fill(agent, w, seq, log, first)
      .catch((err: unknown) => this.end(log, err, w, agent.prefix))
      .finally(() => stop.abort());
    return log;
  }

  private async fill(agent: AgentDefinition, w: WatchedRequest, seq: number, log: RequestEventLog, first: StreamEvent[]): Promise<void> {
    let batch: StreamEvent[] | undefined = first;
    let last = -1;
    let progressAt = Date.now();
    let failingSince: number | undefined;
    /** When this follower first read the record ended (see the wait for its final event below). */
    let endedSeenAt: number | undefined;
    const backoff = new PollBackoff(POLL_MS, MAX_POLL_MS);
    for (;;) {
      let wait: number;
      try {
        batch ??= (await this.reader.streamEvents(w, seq, last)) ?? [];
        let arrived = false;
        for (const e of batch) {
          if (e.n <= last) continue;
          const ends = isFinalEvent(e.event) && (await this.endsStream(e, w)); // before it is sent: a read that fails is retried from `last`
          log.next = e.n; // the stored id, not a new one
          this.events.append(log, e.event, e.data);
          last = e.n;
          arrived = true;
          if (ends) return this.events.close(log);
        }
        if (log.done || !log.remote) return; // dropped (the process's log bounds) or a run here took it over
        wait = arrived ? POLL_MS : backoff.next();
        if (arrived) {
          progressAt = Date.now();
          backoff.reset();
        } else {
          const record = await this.reader.request(w, w.requestId);
          if (!record) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${w.requestId} no longer exists`);
          if (hasEnded(record)) {
            // Its final event may still be on its way to the store: wait for it a moment, from the
            // record's own time and from when this follower first saw it ended. A record stamped
            // during a store stall becomes visible only after it, its stream's final event queued
            // behind the recorder's retries (each up to RETRY_MAX_MS apart): its own time alone
            // had passed already, and the outcome went out under OUTCOME_N (e2e follower-stall).
            // Only a stream that stored events has a final event to wait for.
            endedSeenAt ??= Date.now();
            if (!settled(record, this.writer.now()) || (last >= 0 && Date.now() - endedSeenAt < SEEN_ENDED_GRACE_MS)) wait = POLL_MS;
            else return this.finish(log, synthesizedOutcome(agent, record, last, this.logger));
          } else if (await this.lost(w, progressAt)) {
            const lost = new DomainError(ErrorCode.ABANDONED, `Request ${w.requestId} was lost: the replica running it stopped and nobody took its task over`);
            const data = errorEventData(lost, agent.prefix, this.logger, { task_id: w.taskId, request_id: w.requestId });
            return this.finish(log, [{ n: OUTCOME_N, event: 'error', data }]);
          }
        }
        failingSince = undefined;
      } catch (err) {
        if (!(err instanceof StateStoreUnavailableError)) throw err;
        failingSince ??= Date.now();
        if (Date.now() - failingSince >= this.storeRetryMs) {
          // Not the request's outcome: the streams end without one, and their clients reattach.
          this.logger.warn(
            { err, task_id: w.taskId, request_id: w.requestId },
            'the store did not answer while following a request run elsewhere; its streams end without an outcome (the clients reattach)',
          );
          return this.events.discard(log);
        }
        this.logger.debug({ err, task_id: w.taskId }, 'reading the stream log failed; retrying');
        wait = backoff.next();
      }
      batch = undefined;
      const graceOver = this.shutdown?.graceOver;
      await sleep(wait, undefined, { signal: graceOver }).catch(() => undefined);
      // This replica stops: the stream ends with SHUTTING_DOWN (reconnect to another one).
      if (graceOver?.aborted) throw graceOver.reason;
      if (!log.listeners.size) return this.events.discard(log); // every stream of it ended: stop polling
    }
  }

  /**
   * Whether stored final event `e` ends the request's stream: always, unless it is a pause the
   * request no longer waits on (decided since: the resume's events follow it in the log).
   */
  private async endsStream(e: StreamEvent, w: WatchedRequest): Promise<boolean> {
    if (e.event !== 'final-response' || e.data.status !== 'Paused') return true;
    const record = await this.reader.request(w, w.requestId);
    return !record || isOutcomeOf(e, record);
  }

  private finish(log: RequestEventLog, outcome: StreamEvent[]): void {
    for (const e of outcome) {
      log.next = e.n;
      this.events.append(log, e.event, e.data);
    }
    this.events.close(log);
  }

  /** The request's lease lapsed and stayed lapsed for another lease length since its last event. */
  private async lost(w: WatchedRequest, progressAt: number): Promise<boolean> {
    const { leaseMs } = this.writer.timing;
    if (Date.now() - progressAt < 2 * leaseMs) return false;
    const task = await this.reader.current(w);
    const now = this.writer.now(); // the store's clock, as the lease's expiry
    if (!task) return true;
    if (task.status === 'Paused' || leaseActive(task, now)) return false;
    return (task.lease?.expiresAt ?? 0) + leaseMs < now;
  }

  /** Something other than the store's stalls (the request gone, this replica stopping): an `error` event, unless the outcome was sent. */
  private end(log: RequestEventLog, err: unknown, w: WatchedRequest, instance: string): void {
    if (!log.final) this.events.append(log, 'error', errorEventData(err, instance, this.logger, { task_id: w.taskId, request_id: w.requestId }));
    this.events.close(log);
  }
}
