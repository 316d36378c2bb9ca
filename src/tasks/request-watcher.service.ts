import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AgentDefinition } from '../agents/config/agent-definition';
import { LOGGER } from '../app.tokens';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { problemOf } from '../common/errors/problem-of';
import { StateStore } from '../state/state-store';
import { StateStoreUnavailableError } from '../state/state.errors';
import { recoverLapsed } from './lifecycle/admit';
import { leaseActive } from './lifecycle/lease';
import { outcomeEvents } from './request-response';
import { RequestRunner } from './request-runner.service';
import { RunningRequests } from './running-requests';
import { RequestEventLog, TaskEventLog } from './task-event-log';
import { TaskWriter } from './task-writer';

/** How often a watched request is looked up in the store (cheap next to a model call). */
const POLL_MS = 250;
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
 * replica records it first.
 */
@Injectable()
export class RequestWatcher {
  private background = 0;

  constructor(
    private readonly store: StateStore,
    private readonly writer: TaskWriter,
    private readonly runner: RequestRunner,
    private readonly running: RunningRequests,
    private readonly events: TaskEventLog,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Watches a queued request accepted here with no stream (bounded: see MAX_BACKGROUND_WATCHES). */
  watchInBackground(agent: AgentDefinition, w: WatchedRequest): void {
    if (this.background >= MAX_BACKGROUND_WATCHES) {
      this.logger.warn({ task_id: w.taskId, request_id: w.requestId }, 'too many queued requests watched; this one relies on the next follow-on or another replica');
      return;
    }
    this.background++;
    this.watch(agent, w)
      .catch((err: unknown) => this.logger.warn({ err, task_id: w.taskId, request_id: w.requestId }, 'watching a queued request failed'))
      .finally(() => this.background--);
  }

  async watch(agent: AgentDefinition, w: WatchedRequest, log?: RequestEventLog, signal?: AbortSignal): Promise<void> {
    const access = { tenantId: w.tenantId, taskId: w.taskId };
    for (;;) {
      if (signal?.aborted || this.running.has(w.requestId)) return; // a run here records its own events
      try {
        const task = await this.store.getTask(w.tenantId, w.taskId);
        const record = task && (await this.store.getRequest(w.tenantId, w.requestId));
        if (!task || !record) {
          this.end(log, new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${w.requestId} no longer exists`), w, agent.prefix);
          return;
        }
        if (record.status !== 'Queued' && record.status !== 'Running') {
          if (log && !log.final) {
            try {
              for (const e of outcomeEvents(agent, record)) this.events.append(log, e.event, e.data);
            } catch (err) {
              this.end(log, err, w, agent.prefix);
              return;
            }
          }
          if (log) this.events.close(log);
          return;
        }
        if (!leaseActive(task) && task.status !== 'Paused' && (task.lease || task.queued === w.requestId)) {
          const { result } = await this.writer.update(access, recoverLapsed(this.writer.timing));
          if (result.kind === 'run') this.runner.runInBackground(agent, result.run);
          continue;
        }
      } catch (err) {
        if (!(err instanceof StateStoreUnavailableError)) {
          this.end(log, err, w, agent.prefix);
          throw err;
        }
      }
      await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
    }
  }

  private end(log: RequestEventLog | undefined, err: unknown, w: WatchedRequest, instance: string): void {
    if (!log) return;
    if (!log.final) {
      const ids = { task_id: w.taskId, request_id: w.requestId };
      this.events.append(log, 'error', { ...problemOf(err, instance, this.logger, { task_id: w.taskId }), ...ids });
    }
    this.events.close(log);
  }
}
