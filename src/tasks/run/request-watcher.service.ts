import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { LOGGER } from '../../app.tokens';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { ShutdownStateService } from '../../common/shutdown/shutdown-state.service';
import { StateStoreUnavailableError } from '../../state/state.errors';
import { recoverLapsed } from '../lifecycle/admit';
import { leaseActive } from '../lifecycle/lease';
import { PollBackoff } from './poll-backoff';
import { RequestRunnerService } from './request-runner.service';
import { RunningRequestsService } from './running-requests.service';
import { errorEventData, hasEnded, OUTCOME_N, synthesizedOutcome } from '../events/stream-outcome';
import { RequestEventLog, TaskEventLogService } from '../events/task-event-log.service';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';

/** How often a watched request is looked up in the store at first (cheap next to a model call). */
const POLL_MS = 250;
/** Each look-up that finds it unchanged doubles the wait, up to this (a lease lasts much longer). */
const MAX_POLL_MS = 2_000;
/** Watches of queued requests nobody streams, per process (a stream's watch is never refused). */
const MAX_BACKGROUND_WATCHES = 1000;

export interface WatchedRequest {
  tenantId: string;
  taskId: string;
  requestId: string;
}

/**
 * Follows a request this replica does not run, until it ends: a queued follow-on (whose stream,
 * or whose 202, is here) or a stream reconnected on a replica other than the one running it. The
 * store is the only place to watch, so it is polled. While watching it recovers the task when the
 * lease ahead lapsed (the holder's process died): the dead request is closed as abandoned and the
 * waiting one runs here, so a queued request is never lost with the replica ahead of it. With a
 * `log`, the outcome is recorded there (as a live stream would send it) unless a run on this
 * replica records it first. A `log` filled for a reconnect (`mirror`) stops being filled once no
 * stream follows it, and ends with ABANDONED when the lease stays lapsed for another lease length
 * (nobody took the task over): a replay never outlives the request it follows.
 */
@Injectable()
export class RequestWatcherService implements OnApplicationShutdown {
  private background = 0;
  /**
   * Aborted when the application closes: every watch ends then. Its poll loop waits out a store
   * that answers "unavailable", which a closed store does, so without this it would poll forever
   * (and keep the process alive) after `app.close()`, as after a config reload retires an app.
   */
  private readonly closed = new AbortController();

  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly runner: RequestRunnerService,
    private readonly running: RunningRequestsService,
    private readonly events: TaskEventLogService,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() private readonly shutdown?: ShutdownStateService,
  ) {}

  onApplicationShutdown(): void {
    this.closed.abort();
  }

  /** Watches a queued request accepted here with no stream (bounded: see MAX_BACKGROUND_WATCHES). */
  watchInBackground(agent: AgentDefinition, w: WatchedRequest): void {
    if (this.background >= MAX_BACKGROUND_WATCHES) {
      this.logger.warn(
        { task_id: w.taskId, request_id: w.requestId },
        'too many queued requests watched; this one relies on the next follow-on or another replica',
      );
      return;
    }
    this.background++;
    this.watch(agent, w)
      .catch((err: unknown) => this.logger.warn({ err, task_id: w.taskId, request_id: w.requestId }, 'watching a queued request failed'))
      .finally(() => this.background--);
  }

  /**
   * The log a reconnect follows for request `seq` run elsewhere, when the store keeps no stream log
   * of it: filled with the outcome once there is one, ids from `startAt`. Concurrent reconnects
   * share one log and one watch.
   */
  mirror(agent: AgentDefinition, w: WatchedRequest, seq: number, startAt: number): RequestEventLog {
    const shared = this.events.get(w.tenantId, w.taskId, seq);
    if (shared) return shared;
    const log = this.events.open(w.tenantId, w.taskId, seq, startAt, true);
    void this.watch(agent, w, log).catch(() => undefined);
    return log;
  }

  async watch(agent: AgentDefinition, w: WatchedRequest, log?: RequestEventLog, signal?: AbortSignal): Promise<void> {
    const access = { tenantId: w.tenantId, taskId: w.taskId };
    const backoff = new PollBackoff(POLL_MS, MAX_POLL_MS);
    let seen = '';
    const graceOver = this.shutdown?.graceOver;
    const wake = AbortSignal.any([this.closed.signal, ...(signal ? [signal] : []), ...(graceOver ? [graceOver] : [])]);
    for (;;) {
      if (signal?.aborted || this.running.has(w.requestId)) return; // a run here records its own events
      if (this.closed.signal.aborted) {
        // The application closed: nothing here may touch the store any more; a stream still open ends.
        this.end(log, new DomainError(ErrorCode.SHUTTING_DOWN, 'This replica is stopping; reconnect to another one'), w, agent.prefix);
        return;
      }
      if (graceOver?.aborted) {
        // The replica stops: its stream ends with SHUTTING_DOWN (reconnect to another replica).
        this.end(log, graceOver.reason, w, agent.prefix);
        return;
      }
      try {
        const task = await this.reader.current(w);
        const record = task && (await this.reader.request(w, w.requestId));
        if (!task || !record) {
          this.end(log, new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${w.requestId} no longer exists`), w, agent.prefix);
          return;
        }
        if (hasEnded(record)) {
          if (log && !log.final) {
            // With the ids every replica gives an outcome no stream here recorded (src/tasks/events/stream-outcome.ts).
            for (const e of synthesizedOutcome(agent, record, log.next - 1, this.logger)) {
              log.next = e.n;
              this.events.append(log, e.event, e.data);
            }
          }
          if (log) this.events.close(log);
          return;
        }
        // A draining replica takes nothing over: the store keeps the request for another one.
        const recovers = !this.shutdown?.draining;
        if (recovers && !leaseActive(task, this.writer.now()) && task.status !== 'Paused' && (task.lease || task.queued === w.requestId)) {
          const { result } = await this.writer.update(access, recoverLapsed(this.writer.timing));
          if (result.kind === 'run') this.runner.runInBackground(agent, result.run);
          if (result.kind !== 'none') continue;
          // Nothing to recover, and lapsed for another lease length: the request is lost (and
          // polling again, at once, would only spin).
          if (log?.remote && (task.lease?.expiresAt ?? 0) + this.writer.timing.leaseMs < this.writer.now()) {
            this.end(
              log,
              new DomainError(ErrorCode.ABANDONED, `Request ${w.requestId} was lost: the replica running it stopped and nobody took its task over`),
              w,
              agent.prefix,
              OUTCOME_N,
            );
            return;
          }
        }
        // A change of who holds or waits (not a lease renewal) is news: look again soon.
        const state = `${record.status}:${task.lease?.requestId}:${task.queued}`;
        if (state !== seen) backoff.reset();
        seen = state;
      } catch (err) {
        if (!(err instanceof StateStoreUnavailableError)) {
          this.end(log, err, w, agent.prefix);
          throw err;
        }
      }
      await sleep(backoff.next(), undefined, { signal: wake }).catch(() => undefined);
      if (log?.remote && !log.done && !log.listeners.size) return this.events.discard(log); // no stream follows it any more
    }
  }

  /** Ends `log` with an `error` event (at `n` when given: an outcome, as ABANDONED, sorts last), unless it has its outcome. */
  private end(log: RequestEventLog | undefined, err: unknown, w: WatchedRequest, instance: string, n?: number): void {
    if (!log) return;
    if (!log.final) {
      if (n !== undefined) log.next = n;
      this.events.append(log, 'error', errorEventData(err, instance, this.logger, { task_id: w.taskId, request_id: w.requestId }));
    }
    this.events.close(log);
  }
}
