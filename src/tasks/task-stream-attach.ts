import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { RequestRecord, TaskRecord } from '../state/state.entities';
import { RequestWatcher } from './request-watcher.service';
import { ReplayAdmission } from './replay-admission';
import { owned } from './stateful-invoker.service';
import { StoredStreamFollower } from './stored-stream-follower';
import { RequestEventLog, TaskEventLog } from './task-event-log';
import { TaskWriter } from './task-writer';

const EVENT_ID = /^(\d+)-(\d+)$/;

/**
 * What `GET /tasks/{id}/stream` sends: a log followed after `after` (then `release` when the stream
 * ends: see ReplayAdmission), or nothing (the client saw the end).
 */
export type Attached = { kind: 'stream'; log: RequestEventLog; after: number; release: () => void } | { kind: 'ended' };

/**
 * `GET /tasks/{task_id}/stream`: reattach to a task's stream. With an event id `{seq}-{n}` it is
 * request `seq`'s events after `n`; without one, every event of the current request (the running
 * one, else the last). Then the rest live, until the request's final event.
 *
 * When this process ran or watched the request, its event log holds the exact events. Otherwise a
 * log is started here that the RequestWatcher fills with the request's outcome from the store once
 * it has one (as a live stream sends it, with ids after `n`). A client whose id is the final event
 * of a request that ended here gets `ended` (the route answers 204, which stops an `EventSource`
 * from reconnecting). Ownership is checked first, before a stream opens (as `GET /tasks/{id}`).
 * A stream that follows the store (the request runs elsewhere) must be admitted first (429
 * TOO_MANY_STREAMS past the bounds), and concurrent ones share one follower.
 */
@Injectable()
export class TaskStreamAttach {
  constructor(
    private readonly store: StateStore,
    private readonly writer: TaskWriter,
    private readonly events: TaskEventLog,
    private readonly watcher: RequestWatcher,
    private readonly follower: StoredStreamFollower,
    private readonly admission: ReplayAdmission,
  ) {}

  async attach(agent: AgentDefinition, principal: Principal, taskId: string, lastEventId: string | undefined): Promise<Attached> {
    const position = lastEventId === undefined ? undefined : parseEventId(lastEventId);
    const task = await this.writer.read(owned(agent, principal, taskId));
    const seq = position?.seq ?? (await this.currentSeq(task));
    const after = position?.n ?? -1;
    const local = this.events.get(principal.tenantId, task.taskId, seq);
    if (local && (!local.remote || local.done)) {
      if (local.done && !local.events.some((e) => e.n > after)) return { kind: 'ended' };
      return { kind: 'stream', log: local, after, release: () => undefined };
    }
    const release = this.admission.admit(principal);
    try {
      return { kind: 'stream', log: local ?? (await this.followStore(agent, task, seq, after)), after, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** The log of a request run elsewhere: mirrored from the store's stream log, else its outcome once stored. */
  private async followStore(agent: AgentDefinition, task: TaskRecord, seq: number, after: number): Promise<RequestEventLog> {
    const request = await this.requestAt(task, seq);
    const watched = { tenantId: task.tenantId, taskId: task.taskId, requestId: request.requestId };
    return (await this.follower.open(agent, watched, seq)) ?? this.watcher.mirror(agent, watched, seq, after + 1);
  }

  /** The running request's seq, else the last request's. */
  private async currentSeq(task: TaskRecord): Promise<number> {
    const running = task.lease && (await this.store.getRequest(task.tenantId, task.lease.requestId));
    if (running) return running.seq;
    if (task.requestCount === 0) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request`);
    return task.requestCount - 1;
  }

  private async requestAt(task: TaskRecord, seq: number): Promise<RequestRecord> {
    const request = (await this.store.listRequests(task.tenantId, task.taskId)).find((r) => r.seq === seq);
    if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request ${seq}`);
    return request;
  }
}

/** `{request seq}-{n}`, else 422 naming `last_event_id` (the header and the query are one parameter). */
export function parseEventId(value: string): { seq: number; n: number } {
  const m = EVENT_ID.exec(value.trim());
  if (!m) {
    const message = 'last_event_id (or the Last-Event-ID header) must be an event id of this API ({request seq}-{n})';
    throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'last_event_id', message }] });
  }
  return { seq: Number(m[1]), n: Number(m[2]) };
}
