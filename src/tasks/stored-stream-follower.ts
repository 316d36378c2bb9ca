import { Inject, Injectable, Optional } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AgentDefinition } from '../agents/config/agent-definition';
import { LOGGER } from '../app.tokens';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { problemOf } from '../common/errors/problem-of';
import { ShutdownState } from '../common/shutdown/shutdown-state';
import { StateStore } from '../state/state-store';
import { leaseActive } from './lifecycle/lease';
import { PollBackoff } from './poll-backoff';
import { outcomeEvents } from './request-response';
import { RequestWatcher, WatchedRequest } from './request-watcher.service';
import { isFinalEvent } from './stream-event-writer';
import { RequestEventLog, TaskEventLog } from './task-event-log';
import { TaskWriter } from './task-writer';

/** How often the store's stream log is read while events arrive (a read that brings none doubles it). */
const POLL_MS = 100;
/** The longest wait between two reads while nothing arrives. */
const MAX_POLL_MS = 2_000;
/** Polls after the request ended with no final event stored (its last batch may still be on the way). */
const GRACE_POLLS = 10;

/**
 * Mirrors, into this replica's event log, the stream log another replica writes through the store
 * (src/tasks/stream-event-writer.ts): every stored event of request `seq` with its own id, read
 * every POLL_MS (backing off to MAX_POLL_MS while nothing arrives) until its final event, so a stream reattached here sends exactly the events the
 * client missed and then the rest as they are stored. When the log ends without a final event
 * (past its bound, or its writes failed), the outcome is sent from the request record, as the
 * RequestWatcher does, with ids after the last stored one. The watcher runs alongside for what it
 * does for any watched request: recovering the task when the replica running it died.
 *
 * Bounded: one mirror per request on this replica (concurrent reconnects share it), admitted per
 * caller and replica (ReplayAdmission), stopped once no stream follows it, and ended with the
 * outcome (or ABANDONED) when the request's lease lapsed and stayed lapsed for another lease length
 * with no new event: a replay never polls for a request nobody runs.
 */
@Injectable()
export class StoredStreamFollower {
  constructor(
    private readonly store: StateStore,
    private readonly events: TaskEventLog,
    private readonly watcher: RequestWatcher,
    private readonly writer: TaskWriter,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() private readonly shutdown?: ShutdownState,
  ) {}

  /** Opens the mirror log and fills it in the background; undefined when the store keeps no stream log. */
  async open(agent: AgentDefinition, w: WatchedRequest, seq: number): Promise<RequestEventLog | undefined> {
    const first = await this.store.readStreamEvents(w.tenantId, w.taskId, seq, -1).catch(() => undefined);
    if (first === undefined) return undefined;
    const shared = this.events.get(w.tenantId, w.taskId, seq); // a reconnect that came at the same time
    if (shared) return shared;
    const log = this.events.open(w.tenantId, w.taskId, seq, 0, true);
    const stop = new AbortController();
    void this.watcher.watch(agent, w, undefined, stop.signal).catch(() => undefined);
    void this.fill(agent, w, seq, log, first)
      .catch((err: unknown) => this.end(log, err, w, agent.prefix))
      .finally(() => stop.abort());
    return log;
  }

  private async fill(agent: AgentDefinition, w: WatchedRequest, seq: number, log: RequestEventLog, first: { n: number; event: string; data: Record<string, unknown> }[]): Promise<void> {
    let batch = first;
    let last = -1;
    let grace = GRACE_POLLS;
    let progressAt = Date.now();
    const backoff = new PollBackoff(POLL_MS, MAX_POLL_MS);
    for (;;) {
      for (const e of batch) {
        log.next = e.n; // the stored id, not a new one
        this.events.append(log, e.event, e.data);
        last = e.n;
        if (isFinalEvent(e.event)) return this.events.close(log);
      }
      if (log.done || !log.remote) return; // dropped (the process's log bounds) or a run here took it over
      if (batch.length) {
        progressAt = Date.now();
        backoff.reset();
      } else {
        const record = await this.store.getRequest(w.tenantId, w.requestId);
        if (!record) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${w.requestId} no longer exists`);
        const ended = record.status !== 'Queued' && record.status !== 'Running';
        if (ended ? --grace < 0 : await this.lost(w, progressAt)) {
          log.next = last + 1;
          if (!ended) throw new DomainError(ErrorCode.ABANDONED, `Request ${w.requestId} was lost: the replica running it stopped and nobody took its task over`);
          for (const e of outcomeEvents(agent, record)) this.events.append(log, e.event, e.data);
          return this.events.close(log);
        }
      }
      const graceOver = this.shutdown?.graceOver;
      await sleep(grace < GRACE_POLLS ? POLL_MS : backoff.next(), undefined, { signal: graceOver }).catch(() => undefined);
      // This replica stops: the stream ends with SHUTTING_DOWN (reconnect to another one).
      if (graceOver?.aborted) throw graceOver.reason;
      if (!log.listeners.size) return this.events.discard(log); // every stream of it ended: stop polling
      batch = await this.store.readStreamEvents(w.tenantId, w.taskId, seq, last).catch((err: unknown) => {
        this.logger.debug({ err, task_id: w.taskId }, 'reading the stream log failed; retrying');
        return [];
      }) ?? [];
    }
  }

  /** The request's lease lapsed and stayed lapsed for another lease length since its last event. */
  private async lost(w: WatchedRequest, progressAt: number): Promise<boolean> {
    const { leaseMs } = this.writer.timing;
    if (Date.now() - progressAt < 2 * leaseMs) return false;
    const task = await this.store.getTask(w.tenantId, w.taskId);
    const now = this.writer.now(); // the store's clock, as the lease's expiry
    if (!task) return true;
    if (task.status === 'Paused' || leaseActive(task, now)) return false;
    return (task.lease?.expiresAt ?? 0) + leaseMs < now;
  }

  private end(log: RequestEventLog, err: unknown, w: WatchedRequest, instance: string): void {
    if (!log.final) this.events.append(log, 'error', { ...problemOf(err, instance, this.logger, { task_id: w.taskId }), task_id: w.taskId, request_id: w.requestId });
    this.events.close(log);
  }
}
