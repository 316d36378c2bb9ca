import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { AuditLog } from '../common/logging/audit-log';
import { LogContext } from '../common/logging/log-context';
import { sessionDeletedEvent } from '../archive/archive-events';
import { TaskRecord } from '../state/state.entities';
import { ArchiverService } from './archive/archiver.service';
import { cancel } from './lifecycle/cancel';
import { markDeleting } from './lifecycle/delete';
import { leaseActive } from './lifecycle/lease';
import { RunningRequestsService } from './run/running-requests.service';
import { TaskEventLogService } from './events/task-event-log.service';
import type { TaskAccess } from './writer/task-access';
import { TaskReaderService } from './writer/task-reader.service';
import { TaskWriterService } from './writer/task-writer.service';
import { IdempotencyClaim } from './idempotency/idempotency-claim';
import { IdempotencyService } from './idempotency/idempotency.service';

/** Requests removed per store step (each step is atomic; DynamoDB takes at most 49). */
export const DELETE_BATCH_SIZE = 25;
/** Tasks of a session collected, then deleted, per round of `DELETE /sessions/{id}`. */
const SESSION_ROUND = 1000;
/** Rounds of one `DELETE /sessions/{id}` (10,000 tasks); a session with more is 409 TASK_BUSY: call again. */
export const MAX_SESSION_ROUNDS = 10;
/** How long, in lease lengths, a DELETE waits for a request running on another replica to stop. */
const REMOTE_CANCEL_WAIT_LEASES = 2;
const REMOTE_CANCEL_POLL_MS = 100;
/** Tasks of a session read per store page while collecting them. */
const SESSION_PAGE = 100;

/**
 * `DELETE /tasks/{id}` and `DELETE /sessions/{id}`: the owner's task (or every task of this agent
 * in the owner's session) and everything of it — header, requests, request-id and session index
 * entries, the stream log (removed by the store's deleteTaskBatch), and this replica's replay log —
 * is removed.
 *
 * 1. A running request is canceled first: aborted at once on this replica, or asked through the
 *    task on another one and waited for (boundedly), its outcome stored as cancel stores it.
 * 2. One compare-and-set marks the header `deletingAt` (lifecycle/delete.ts): from then on the task
 *    reads as not found everywhere, and nothing can write to it.
 * 3. The store removes the requests in atomic batches of DELETE_BATCH_SIZE, then the header.
 *
 * A crash (or a store failure) between batches leaves a task that reads as not found, whose marked
 * header still names its owner: a re-run of the same DELETE (of the task or its session) finds it
 * and finishes the job. Another owner's or tenant's task, another agent's, or one already gone is
 * 404 and nothing is touched.
 */
@Injectable()
export class TaskDeletionService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly running: RunningRequestsService,
    private readonly events: TaskEventLogService,
    private readonly audit: AuditLog,
    private readonly archiver: ArchiverService,
    private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * With an Idempotency-Key, the key is claimed by the commit that marks the task, and a repeat
   * answers 204 as the first copy did (finishing the deletion if a crash left it half done),
   * where without one a second DELETE of a task already gone is 404.
   */
  deleteTask(agent: AgentDefinition, principal: Principal, taskId: string, claim?: IdempotencyClaim): Promise<void> {
    return this.idempotency.once(
      claim,
      () => this.deleteOnce(agent, principal, taskId, claim),
      async (entry) => {
        await this.finishInterrupted(principal.tenantId, entry.taskId);
      },
    );
  }

  private async deleteOnce(agent: AgentDefinition, principal: Principal, taskId: string, claim: IdempotencyClaim | undefined): Promise<void> {
    const task = await this.reader.forDeletion(principal.tenantId, taskId);
    if (!task || task.agent !== agent.source || task.ownerId !== principal.ownerId) {
      throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${taskId}`);
    }
    const ids = { task_id: task.taskId, session_id: task.sessionId };
    LogContext.active()?.set(ids);
    await this.delete(agent, principal, task, claim);
    this.audit.record('task.deleted', ids);
  }

  async deleteSession(agent: AgentDefinition, principal: Principal, sessionId: string): Promise<void> {
    LogContext.active()?.set({ session_id: sessionId });
    let deleted = 0;
    for (let round = 0; ; round++) {
      const tasks = await this.sessionTasks(agent, principal, sessionId);
      if (!tasks.length) {
        if (round === 0) throw new DomainError(ErrorCode.SESSION_NOT_FOUND, `No session ${sessionId}`);
        await this.archiver.write([sessionDeletedEvent(principal, sessionId, agent.source, this.nowIso(), deleted)], []);
        this.audit.record('session.deleted', { session_id: sessionId });
        return;
      }
      if (round === MAX_SESSION_ROUNDS) {
        throw new DomainError(
          ErrorCode.TASK_BUSY,
          `Session ${sessionId} still has tasks after deleting ${MAX_SESSION_ROUNDS * SESSION_ROUND} of them; call again`,
          { retryAfter: 1 },
        );
      }
      // One by one: a task another call deletes meanwhile is simply gone (its 404 is not ours).
      for (const task of tasks) {
        await this.delete(agent, principal, task).then(
          () => deleted++,
          (err: unknown) => {
            if (!(err instanceof DomainError && err.code === ErrorCode.TASK_NOT_FOUND)) throw err;
          },
        );
      }
    }
  }

  /** Up to SESSION_ROUND of the caller's tasks of this agent in the session, half-deleted ones included. */
  private async sessionTasks(agent: AgentDefinition, principal: Principal, sessionId: string): Promise<TaskRecord[]> {
    const tasks: TaskRecord[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.reader.sessionTasks(principal, sessionId, {
        limit: SESSION_PAGE,
        cursor,
        includeDeleting: true,
      });
      tasks.push(...page.items.filter((t) => t.agent === agent.source));
      cursor = page.nextCursor;
    } while (cursor && tasks.length < SESSION_ROUND);
    return tasks.slice(0, SESSION_ROUND);
  }

  /**
   * A task id held by a task whose deletion was interrupted (a crash between batches): finishes the
   * deletion, so the id is free again. False when the id holds no task being deleted.
   */
  async finishInterrupted(tenantId: string, taskId: string): Promise<boolean> {
    const task = await this.reader.forDeletion(tenantId, taskId);
    if (task?.deletingAt === undefined) return false;
    await this.archiver.deleted(task, task.deletingAt);
    this.events.forget(tenantId, taskId);
    await this.finish(tenantId, taskId, task.requestCount);
    return true;
  }

  /**
   * Erasure (PrincipalErasureService, `DELETE /admin/principals/{oid}`): removes the task as
   * `delete` does (a running request canceled first, here or on another replica; then marked; then
   * removed in batches) but archives nothing of it: no events, no `task_deleted` row, no mark in the
   * archive, whose rows of the person are erased next. Any agent's task; the caller found it in the
   * person's own listings. False when another call marked it first (its listing shows it again,
   * half-deleted, and this finishes it then).
   */
  async eraseTask(task: TaskRecord): Promise<boolean> {
    const { tenantId, taskId } = task;
    if (task.deletingAt === undefined) {
      const access = { tenantId, taskId, agentSource: task.agent, ownerId: task.ownerId, foreign: 'not-found' as const };
      const holder = task.lease?.requestId;
      try {
        if (holder && leaseActive(task, this.writer.now()) && !(await this.running.cancel(holder))) await this.cancelRemote(access, holder);
        task = (await this.writer.update(access, markDeleting())).task;
      } catch (err) {
        if (err instanceof DomainError && err.code === ErrorCode.TASK_NOT_FOUND) return false;
        throw err;
      }
    }
    this.events.forget(tenantId, taskId);
    await this.finish(tenantId, taskId, task.requestCount);
    return true;
  }

  private nowIso(): string {
    return new Date(this.writer.now()).toISOString();
  }

  private async delete(agent: AgentDefinition, principal: Principal, task: TaskRecord, claim?: IdempotencyClaim): Promise<void> {
    const { tenantId } = principal;
    if (task.deletingAt === undefined) {
      const access = { tenantId, taskId: task.taskId, agentSource: agent.source, ownerId: principal.ownerId, foreign: 'not-found' as const };
      const holder = task.lease?.requestId;
      if (holder && leaseActive(task, this.writer.now()) && !(await this.running.cancel(holder))) await this.cancelRemote(access, holder);
      // The archive takes everything of the task before it is marked (and so hidden from every read).
      await this.archiver.beforeDeletion(tenantId, task.taskId);
      task = (await this.writer.update(access, markDeleting(), {}, claim && { claim })).task;
    }
    await this.archiver.deleted(task, task.deletingAt ?? this.nowIso());
    this.events.forget(tenantId, task.taskId);
    await this.finish(tenantId, task.taskId, task.requestCount);
  }

  /**
   * A request running on another replica: asked to stop through the task (lifecycle `cancel`, as
   * `POST /cancel` does), then waited for until its lease is released, for at most
   * REMOTE_CANCEL_WAIT_LEASES lease lengths (a replica that died never answers: its lease lapses,
   * and the mark that follows keeps it from writing anything).
   */
  private async cancelRemote(access: TaskAccess, holder: string): Promise<void> {
    await this.writer.update(access, cancel(this.writer.timing)).catch((err: unknown) => {
      if (!(err instanceof DomainError && err.code === ErrorCode.TASK_NOT_RUNNING)) throw err;
    });
    const deadline = Date.now() + REMOTE_CANCEL_WAIT_LEASES * this.writer.timing.leaseMs;
    while (Date.now() < deadline) {
      const task = await this.reader.current(access);
      if (!task || task.lease?.requestId !== holder || !leaseActive(task, this.writer.now())) return;
      await sleep(REMOTE_CANCEL_POLL_MS);
    }
  }

  /**
   * Runs the store's batches until no marked task is left under the id (bounded by its request
   * count). Another process may finish it first, and even create a new task under the id: the
   * store leaves that one alone and answers done.
   */
  private async finish(tenantId: string, taskId: string, requestCount: number): Promise<void> {
    // Twice the batches it needs, plus slack: a step can lose a race with another process finishing the same deletion.
    const steps = 2 * Math.ceil((requestCount + 2) / DELETE_BATCH_SIZE) + 10;
    for (let i = 0; i < steps; i++) if (await this.writer.deleteBatch(tenantId, taskId, DELETE_BATCH_SIZE)) return;
    throw new Error(`Task ${taskId} was not deleted within ${steps} batches`);
  }
}
