import { Injectable } from '@nestjs/common';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { ArchiveEntry, LeaseEntry, Page, StateStore, StreamEvent } from '../../state/state-store';
import { IdempotencyEntry, RequestRecord, TaskRecord } from '../../state/state.entities';
import { TaskState } from '../lifecycle/transition';
import { TaskAccess } from './task-access';
import { Reads, TaskWriterService } from './task-writer.service';

/** Where a task is: its tenant and id (a checked `TaskRecord` is one). */
type TaskKey = Pick<TaskRecord, 'tenantId' | 'taskId'>;
/** A page of a listing: at most `limit` items after `cursor`. */
type PageOptions = { limit: number; cursor?: string };

/**
 * The one reader, beside the one writer: every read of the store that a service makes goes through
 * here, never to the store itself (src/architecture.spec.ts keeps that), so who may read what is
 * decided in one place:
 * - a task, through the writer's owner-checked read (`task`: the writer keeps it, because it owns
 *   the cache that read may stand on and the expiry of a due pause, which is a write);
 * - what belongs to a task a caller has already been checked for (its requests, its stream log),
 *   scoped to that task: a request of another task is not found;
 * - the caller's own listings, keyed by the principal's tenant and owner (no other owner's task
 *   can be on those pages);
 * - the unchecked reads of the background loops that run requests, follow them and sweep leases
 *   (`current`, `lapsedLeases`, `forDeletion`), which answer nobody's call by themselves.
 */
@Injectable()
export class TaskReaderService {
  constructor(
    private readonly store: StateStore,
    private readonly writer: TaskWriterService,
  ) {}

  /** The store's clock (TaskWriterService.now), which every answer about a lease or an expiry is judged by. */
  now(): number {
    return this.writer.now();
  }

  /** The task `access` may reach, with the requests `reads` names (TaskWriterService.read). */
  task(access: TaskAccess, reads?: Reads, options?: { cached?: boolean }): Promise<TaskState> {
    return this.writer.read(access, reads, options);
  }

  /** The id of the task holding request `requestId` of the tenant (TaskWriterService.taskOfRequest). */
  taskOfRequest(tenantId: string, requestId: string, options?: { cached?: boolean }): Promise<string | undefined> {
    return this.writer.taskOfRequest(tenantId, requestId, options);
  }

  /**
   * The Idempotency-Key entry under `key` (src/tasks/idempotency/). The key is a digest that
   * includes the caller's owner id and the agent, so it is the caller's own by construction.
   */
  idempotencyEntry(tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
    return this.store.getIdempotencyEntry(tenantId, key);
  }

  /** Every request of the task, in `seq` order. */
  requests(task: TaskKey): Promise<RequestRecord[]> {
    return this.store.listRequests(task.tenantId, task.taskId);
  }

  /** Request `requestId` of the task, or undefined (also when it belongs to another task). */
  async request(task: TaskKey, requestId: string): Promise<RequestRecord | undefined> {
    const record = await this.store.getRequest(task.tenantId, requestId);
    return record?.taskId === task.taskId ? record : undefined;
  }

  /** Request `seq` of the task, else 404 REQUEST_NOT_FOUND. */
  async requestAt(task: TaskKey, seq: number): Promise<RequestRecord> {
    const request = (await this.requests(task)).find((r) => r.seq === seq);
    if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request ${seq}`);
    return request;
  }

  /** Request `seq`'s stored stream events after `after`; undefined when the store keeps no stream log. */
  streamEvents(task: TaskKey, seq: number, after: number): Promise<StreamEvent[] | undefined> {
    return this.store.readStreamEvents(task.tenantId, task.taskId, seq, after);
  }

  /** A page of the caller's tasks in a session (any agent's: the caller filters), oldest first. */
  sessionTasks(principal: Principal, sessionId: string, page: PageOptions & { includeDeleting?: boolean }): Promise<Page<TaskRecord>> {
    return this.store.listSessionTasks(principal.tenantId, principal.ownerId, sessionId, page);
  }

  /** A page of the caller's session ids (any agent's). */
  ownerSessions(principal: Principal, page: PageOptions): Promise<Page<string>> {
    return this.store.listOwnerSessions(principal.tenantId, principal.ownerId, page);
  }

  /** The task as stored now, unchecked: for the loops that follow or run a request already admitted. */
  current(task: TaskKey): Promise<TaskRecord | undefined> {
    return this.store.getTask(task.tenantId, task.taskId);
  }

  /** The task under the id, a half-deleted one included, unchecked: the deletion checks it itself. */
  forDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return this.store.getTaskForDeletion(tenantId, taskId);
  }

  /** A page of the archive index: tasks committed at or before `before` (store clock) that the archive has not taken yet. */
  unarchived(before: number, page: PageOptions): Promise<Page<ArchiveEntry>> {
    return this.store.listUnarchived(before, page);
  }

  /**
   * The task with every request, unchecked, for the archive to derive its events from (the
   * archive's catch-up, and a deletion before it marks the task). Undefined when it reads as missing.
   */
  async archivable(tenantId: string, taskId: string): Promise<{ task: TaskRecord; requests: RequestRecord[] } | undefined> {
    const task = await this.store.getTask(tenantId, taskId);
    return task && { task, requests: await this.store.listRequests(tenantId, taskId) };
  }

  /** A page of the lease index: leases lapsed by the store's clock (the sweep of lapsed leases). */
  lapsedLeases(page: PageOptions): Promise<Page<LeaseEntry>> {
    return this.store.listLapsedLeases(this.store.now(), page);
  }

  /** Every task of the lease index due by `before` (the admin's listing of webhook deliveries: src/tasks/webhooks/). */
  dueBy(before: number, page: PageOptions): Promise<Page<LeaseEntry>> {
    return this.store.listLapsedLeases(before, page);
  }
}
