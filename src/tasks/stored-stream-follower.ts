import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { AgentDefinition } from '../agents/config/agent-definition';
import { LOGGER } from '../app.tokens';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { problemOf } from '../common/errors/problem-of';
import { StateStore } from '../state/state-store';
import { outcomeEvents } from './request-response';
import { RequestWatcher, WatchedRequest } from './request-watcher.service';
import { isFinalEvent } from './stream-event-writer';
import { RequestEventLog, TaskEventLog } from './task-event-log';

/** How often the store's stream log is read while following a request run elsewhere. */
const POLL_MS = 100;
/** Polls after the request ended with no final event stored (its last batch may still be on the way). */
const GRACE_POLLS = 10;

/**
 * Mirrors, into this replica's event log, the stream log another replica writes through the store
 * (src/tasks/stream-event-writer.ts): every stored event of request `seq` with its own id, read
 * every POLL_MS until its final event, so a stream reattached here sends exactly the events the
 * client missed and then the rest as they are stored. When the log ends without a final event
 * (past its bound, or its writes failed), the outcome is sent from the request record, as the
 * RequestWatcher does, with ids after the last stored one. The watcher runs alongside for what it
 * does for any watched request: recovering the task when the replica running it died.
 */
@Injectable()
export class StoredStreamFollower {
  constructor(
    private readonly store: StateStore,
    private readonly events: TaskEventLog,
    private readonly watcher: RequestWatcher,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Opens the mirror log and fills it in the background; undefined when the store keeps no stream log. */
  async open(agent: AgentDefinition, w: WatchedRequest, seq: number): Promise<RequestEventLog | undefined> {
    const first = await this.store.readStreamEvents(w.tenantId, w.taskId, seq, -1).catch(() => undefined);
    if (first === undefined) return undefined;
    const log = this.events.open(w.tenantId, w.taskId, seq);
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
    for (;;) {
      for (const e of batch) {
        log.next = e.n; // the stored id, not a new one
        this.events.append(log, e.event, e.data);
        last = e.n;
        if (isFinalEvent(e.event)) return this.events.close(log);
      }
      if (log.done) return; // dropped (the process's log bound) or a run here took it over
      if (!batch.length) {
        const record = await this.store.getRequest(w.tenantId, w.requestId);
        if (!record) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${w.requestId} no longer exists`);
        if (record.status !== 'Queued' && record.status !== 'Running' && --grace < 0) {
          log.next = last + 1;
          for (const e of outcomeEvents(agent, record)) this.events.append(log, e.event, e.data);
          return this.events.close(log);
        }
      }
      await sleep(POLL_MS);
      batch = await this.store.readStreamEvents(w.tenantId, w.taskId, seq, last).catch((err: unknown) => {
        this.logger.debug({ err, task_id: w.taskId }, 'reading the stream log failed; retrying');
        return [];
      }) ?? [];
    }
  }

  private end(log: RequestEventLog, err: unknown, w: WatchedRequest, instance: string): void {
    if (!log.final) this.events.append(log, 'error', { ...problemOf(err, instance, this.logger, { task_id: w.taskId }), task_id: w.taskId, request_id: w.requestId });
    this.events.close(log);
  }
}
