import { Inject, Injectable, Optional } from '@nestjs/common';
import { newUuid } from '../../common/ids/uuid.util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ENV_CONFIG, LOGGER, TELEMETRY } from '../../app.tokens';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { StateStore, TaskWrite } from '../../state/state-store';
import { IdempotencyEntry, RequestRecord, TaskRecord, WebhookDelivery } from '../../state/state.entities';
import { StateStoreUnavailableError, VersionConflictError } from '../../state/state.errors';
import { isExpired, sealedFor } from '../../state/state-store.util';
import type { Telemetry } from '../../telemetry/telemetry';
import { expirePause, pauseDue } from '../lifecycle/cancel';
import { TaskTiming } from '../lifecycle/lease';
import { withDeliveries } from '../lifecycle/outbox';
import { Change, TaskState, Transition } from '../lifecycle/transition';
import { CachedTask, TaskCache, TASK_CACHE_DEFAULTS } from './task-cache';
import { TaskLanes } from './task-lanes';
import type { IdempotencyClaim } from '../idempotency/idempotency-claim';
import { checked, refusalOf, TaskAccess } from './task-access';

export interface WriteOptions {
  /**
   * The running request's own writes (lease renewals, its final state): a store that stalls or
   * restarts is waited out with backoff (for `persistentMs`) instead of failing the request, until
   * `stopped()` or the lease is provably lost (the transition refuses).
   */
  persistent?: { stopped?: () => boolean };
}

/**
 * An `Idempotency-Key` a write claims (src/tasks/idempotency/): stored in the same commit as the
 * write (TaskWrite.idempotency), naming the task written and, via `requestOf`, the request the
 * transition started or decided. A key held already fails the write with IdempotencyKeyTakenError.
 */
export interface WriteClaim<R> {
  claim: IdempotencyClaim;
  requestOf?: (result: R) => string | undefined;
}

/** The writer's claim of an Idempotency-Key, naming the request `requestOf` finds in the transition's result. */
export function claimed<R>(claim: IdempotencyClaim | undefined, requestOf: (result: R) => string | undefined): WriteClaim<R> | undefined {
  return claim && { claim, requestOf };
}

/**
 * Plans the webhook deliveries a change reports (src/tasks/webhooks/webhook-outbox.service.ts),
 * from the state the transition decided on and the change it made, at `now` (the store's clock):
 * the writer adds them to the header's outbox in the same commit.
 */
export type OutboxPlanner = (tenantId: string, state: TaskState, change: Change<unknown>, now: number) => WebhookDelivery[];

/** Told of each commit this replica made: the task as stored and the request records the commit wrote. */
export type CommitListener = (tenantId: string, task: TaskRecord, requests: RequestRecord[]) => void;

export interface Applied<R> {
  task: TaskRecord;
  result: R;
}

/**
 * How long a caller's write keeps re-deciding after lost compare-and-sets before it answers
 * TASK_BUSY (each loss means another writer progressed; 30 enqueueing follow-ons on a slow
 * DynamoDB need seconds to all get through).
 */
const CONFLICT_MS = 15_000;
/** Longest pause of a caller's write after a lost compare-and-set (the running request's own writes do not pause). */
const MAX_CONFLICT_BACKOFF_MS = 400;
/** How long a caller's write retries a commit whose answer was lost, to learn whether it applied. */
const AMBIGUITY_MS = 3000;
/** Longest backoff between retries on an unavailable store. */
const MAX_BACKOFF_MS = 1000;

/**
 * The one task writer: the owned read plus the compare-and-set loop, used by every lifecycle
 * transition (src/tasks/lifecycle/). A transition is re-applied to a fresh read after a lost
 * compare-and-set. Every write carries a unique `writeId`, so a commit whose answer was lost (a
 * timeout on a write the store did apply) is retried as the very same write and then read back:
 * the caller gets the stored outcome, never a 503 for a turn that was stored, and never a second
 * copy of it. A pause past its approval TTL is expired before anything else reads or writes the task.
 */
@Injectable()
export class TaskWriterService {
  readonly timing: TaskTiming;
  /** How long the running request's own writes wait out an unavailable store. */
  readonly persistentMs: number;
  /** How long a claimed Idempotency-Key is kept (TA_IDEMPOTENCY_TTL_SECONDS), in ms. */
  private readonly idempotencyTtlMs: number;
  private readonly lanes = new TaskLanes();
  /** What this replica last wrote of each task, to commit from without reading (src/tasks/writer/task-cache.ts). */
  private readonly cache: TaskCache;
  private readonly commitListeners: CommitListener[] = [];
  private planner?: OutboxPlanner;

  constructor(
    private readonly store: StateStore,
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(TELEMETRY) private readonly telemetry?: Telemetry,
  ) {
    this.timing = { leaseMs: env.state.leaseMs, ttlSeconds: env.state.taskTtlSeconds, clockSkewMs: store.clockSkewMs };
    this.persistentMs = Math.max(30_000, 5 * env.state.leaseMs);
    this.idempotencyTtlMs = (env.state.idempotencyTtlSeconds ?? 86_400) * 1000;
    // A store in this process is read at no cost: a second copy of it would only take memory.
    const maxBytes = store.inProcess ? 0 : (env.state.taskCacheMaxBytes ?? TASK_CACHE_DEFAULTS.maxBytes);
    this.cache = new TaskCache({ ...TASK_CACHE_DEFAULTS, maxBytes });
  }

  /**
   * The store's clock: what every transition, lease and expiry is judged by (never this process's
   * own clock, which another replica's may disagree with; docs/api.md, "Leases and clocks").
   */
  now(): number {
    return this.store.now();
  }

  /** The largest request record the store takes (StateStore.maxRequestBytes); undefined: no limit. */
  get maxRequestBytes(): number | undefined {
    return this.store.maxRequestBytes;
  }

  /**
   * The one owner-checked read, beside the writes and checked as they are (task-access.ts): the
   * task, with a due pause expired first, and the requests `reads` names (`'all'`: every one; by
   * default none), in `seq` order. Every read of a task for an answer goes through here.
   *
   * `cached`: this replica's view of the task (task-cache.ts) may stand in for the store's, when it
   * can stand in for a write's read. It holds what this replica last wrote, not what another
   * replica wrote since, so it is asked for only right after the caller's own write (a resume's
   * earlier requests); an answer about the task as it is now reads the store.
   */
  async read(access: TaskAccess, reads: Reads = NONE, options: { cached?: boolean } = {}): Promise<TaskState> {
    const view = options.cached ? this.cachedView(cacheKey(access.tenantId, access.taskId), access, false) : undefined;
    if (view) return { task: view.task, requests: reads === 'all' ? view.requests.slice() : named(view, reads(view.task)) };
    let task = checked(await this.store.getTask(access.tenantId, access.taskId), access);
    if (pauseDue(task, this.now())) task = (await this.update(access, expirePause(this.timing))).task;
    return { task, requests: await this.readRequests(task, reads) };
  }

  /**
   * The id of the task that holds request `requestId` of the tenant, or undefined. Who may reach
   * the task is checked by the operation on it, through `read` or `update`. `cached`: from this
   * replica's cached views when one holds the request (a request never moves to another task, so
   * that answer goes stale only by the task going away, which the operation's own read or
   * compare-and-set then finds), else from the store.
   */
  async taskOfRequest(tenantId: string, requestId: string, options: { cached?: boolean } = {}): Promise<string | undefined> {
    const key = options.cached ? this.cache.keyOfRequest(tenantId, requestId) : undefined;
    const held = key === undefined ? undefined : this.cache.get(key)?.task.taskId;
    if (held !== undefined) return held;
    return (await this.store.getRequest(tenantId, requestId))?.taskId;
  }

  /**
   * One bounded step of deleting a task marked for deletion (StateStore.deleteTaskBatch): true once
   * no marked task is left under the id. The mark itself is a transition (lifecycle/delete.ts).
   */
  deleteBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    return this.store.deleteTaskBatch(tenantId, taskId, batchSize);
  }

  /**
   * Calls `listener` after each commit of this writer, synchronously and before the caller hears of
   * it (the audit archive queues the change: src/tasks/archive/archiver.service.ts). A listener must
   * not throw and must not wait on anything: it is on every write's path.
   */
  onCommit(listener: CommitListener): void {
    this.commitListeners.push(listener);
  }

  /**
   * Has every update's change reported to `planner`, whose deliveries join the header's outbox in
   * the same commit (so an event is stored exactly when the transition it reports is). Set only
   * when an agent has webhooks: without it a commit carries nothing more.
   */
  planOutbox(planner: OutboxPlanner): void {
    this.planner = planner;
  }

  /** Clears the archive index's entries of what the archive now holds (StateStore.markArchived). */
  markArchived(entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
    return this.store.markArchived(entries);
  }

  /** Creates a task (`expectedVersion: 0`) with its first request(s). */
  async create<R>(tenantId: string, change: Change<R>, claim?: WriteClaim<R>): Promise<Applied<R>> {
    const task = { ...change.task, writeId: newUuid() };
    const key = cacheKey(tenantId, task.taskId);
    try {
      const written = sealed(tenantId, change.requests);
      const json = this.requestJson(written);
      const stored = await this.commit(tenantId, task, 0, written, {}, undefined, this.entryOf(claim, task, change.result), json);
      this.cache.remember(key, stored, [], written, json);
      this.committed(tenantId, stored, written);
      return { task: stored, result: change.result };
    } catch (err) {
      this.cache.delete(key);
      throw err;
    }
  }

  /**
   * Applies `transition` to the task in one compare-and-set, re-reading and re-applying after a
   * lost race; in the task's lane on this replica (see TaskLanes), the running request's own writes first.
   */
  update<R>(access: TaskAccess, transition: Transition<R>, options: WriteOptions = {}, claim?: WriteClaim<R>): Promise<Applied<R>> {
    return this.lanes.run(access.tenantId, access.taskId, !!options.persistent, () => this.apply(access, transition, options, claim));
  }

  /** The entry a claim stores with the write of `task` (its times by the store's clock). */
  private entryOf<R>(claim: WriteClaim<R> | undefined, task: TaskRecord, result: R): IdempotencyEntry | undefined {
    if (!claim) return undefined;
    const now = this.now();
    const requestId = claim.requestOf?.(result);
    const { key, fingerprint, operation } = claim.claim;
    return { key, fingerprint, operation, taskId: task.taskId, ...(requestId ? { requestId } : {}), createdAt: now, expiresAt: now + this.idempotencyTtlMs };
  }

  private async apply<R>(access: TaskAccess, transition: Transition<R>, options: WriteOptions, claim?: WriteClaim<R>): Promise<Applied<R>> {
    const deadline = Date.now() + this.persistentMs;
    const conflictDeadline = Date.now() + (options.persistent ? this.persistentMs : CONFLICT_MS);
    const key = cacheKey(access.tenantId, access.taskId);
    for (let attempt = 1, unavailable = 0; ;) {
      const view = this.cachedView(key, access, !!transition.settles);
      let task: TaskRecord;
      let requests: RequestRecord[];
      /** Every request of the task as decided on, when known: the cache's view after the commit. */
      let all: RequestRecord[] | undefined;
      if (view) {
        ({ task } = view);
        all = view.requests;
        requests = transition.reads === 'all' ? all : named(view, transition.reads(task));
      } else {
        try {
          task = checked(await this.store.getTask(access.tenantId, access.taskId), access);
          if (pauseDue(task, this.now()) && !transition.settles) {
            task = (await this.apply(access, expirePause(this.timing), options)).task;
          }
          requests = await this.readRequests(task, transition.reads);
          all = transition.reads === 'all' ? requests : undefined;
        } catch (err) {
          if (!this.keepTrying(err, options, deadline)) throw err;
          await sleep(backoff(unavailable++));
          continue;
        }
      }
      let change: ReturnType<Transition<R>['apply']>;
      const now = this.now();
      try {
        change = transition.apply({ task, requests }, now);
      } catch (err) {
        // A refusal is answered only on what the store says, never on this replica's view alone.
        if (!view) throw err;
        this.cache.delete(key);
        continue;
      }
      if ('unchanged' in change) {
        // Nothing to write means no compare-and-set checks the view: decide again on a fresh read.
        if (!view) return { task, result: change.unchanged };
        this.cache.delete(key);
        continue;
      }
      const next = { ...change.task, writeId: newUuid() };
      const planned = this.planner?.(access.tenantId, { task, requests }, change, now);
      if (planned?.length) next.outbox = withDeliveries(change.task.outbox, planned);
      try {
        // Pinned by writeId as well as version, read or cached alike: a task deleted and created
        // again since it was read climbs through the same versions, and must not be written over.
        const entry = this.entryOf(claim, next, change.result);
        const written = sealed(access.tenantId, change.requests);
        const json = this.requestJson(written);
        const stored = await this.commit(access.tenantId, next, task.version, written, options, task.writeId, entry, json);
        if (all) this.cache.remember(key, stored, all, written, json);
        else this.cache.delete(key);
        this.countPause(task, stored);
        this.committed(access.tenantId, stored, written);
        return { task: stored, result: change.result };
      } catch (err) {
        this.cache.delete(key);
        if (err instanceof VersionConflictError && Date.now() < conflictDeadline) {
          // Another writer went first: read again and re-decide. The running request's own writes
          // (lease renewal, its final state) go again at once; callers back off exponentially with
          // jitter, so under a crowd of follow-ons the holder gets through before its lease lapses
          // (otherwise its answer would be lost to a takeover while it was merely outvoted).
          await sleep(options.persistent ? Math.random() * 5 : conflictBackoff(attempt++));
          continue;
        }
        if (err instanceof VersionConflictError)
          throw new DomainError(ErrorCode.TASK_BUSY, `Task ${access.taskId} is changing too fast; try again`, { retryAfter: 1 });
        if (!this.keepTrying(err, options, deadline)) throw err;
        await sleep(backoff(unavailable++));
      }
    }
  }

  /**
   * One commit. When the store does not answer, the same write (same version, same writeId) is
   * retried with backoff: exactly one copy can apply, so a conflict after a lost answer is read
   * back, and the write counts as done when the stored task carries its writeId.
   */
  private commit(
    tenantId: string,
    task: TaskRecord,
    expectedVersion: number,
    requests: RequestRecord[],
    options: WriteOptions,
    expectedWriteId?: string,
    idempotency?: IdempotencyEntry,
    requestJson?: readonly string[],
  ): Promise<TaskRecord> {
    const deadline = Date.now() + (options.persistent ? this.persistentMs : AMBIGUITY_MS);
    const write: TaskWrite = { task, expectedVersion, requests };
    if (expectedWriteId) write.expectedWriteId = expectedWriteId;
    if (idempotency) write.idempotency = idempotency;
    if (requestJson) write.requestJson = requestJson;
    // The first attempt with no async step of the writer's own around it: nearly every commit is answered at once.
    return this.store.commit(tenantId, write).catch((err: unknown) => this.commitAgain(tenantId, write, options, deadline, err));
  }

  /** After a commit failed with `err`: the same write again while the store did not answer it (see commit). */
  private async commitAgain(tenantId: string, write: TaskWrite, options: WriteOptions, deadline: number, err: unknown): Promise<TaskRecord> {
    const { task } = write;
    let answerLost = false;
    for (let attempt = 0; ; attempt++) {
      if (err instanceof VersionConflictError && answerLost) {
        const stored = await this.readBack(tenantId, task.taskId, deadline);
        if (stored && stored.writeId === task.writeId) return stored;
        throw err;
      }
      if (!(err instanceof StateStoreUnavailableError) || Date.now() >= deadline || options.persistent?.stopped?.()) throw err;
      // Never sent: nothing can have applied, so only the running request's own writes wait.
      if (err.unsent && !answerLost && !options.persistent) throw err;
      if (!answerLost) this.logger.warn({ task_id: task.taskId, err: err.message }, 'state store did not answer a write; retrying the same write');
      answerLost = true;
      this.telemetry?.recordStoreError(err.code);
      await sleep(backoff(attempt));
      try {
        return await this.store.commit(tenantId, write);
      } catch (again) {
        err = again;
      }
    }
  }

  /**
   * The written requests as JSON, once, for the commit and the cache's size accounting alike
   * (TaskWrite.requestJson); none when the cache is off (an in-process store keeps objects).
   */
  private requestJson(requests: readonly RequestRecord[]): string[] | undefined {
    return this.cache.enabled && requests.length ? requests.map((r) => JSON.stringify(r)) : undefined;
  }

  private committed(tenantId: string, task: TaskRecord, requests: RequestRecord[]): void {
    for (const listener of this.commitListeners) listener(tenantId, task, requests);
  }

  private async readBack(tenantId: string, taskId: string, deadline: number): Promise<TaskRecord | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.store.getTask(tenantId, taskId);
      } catch (err) {
        if (!(err instanceof StateStoreUnavailableError) || Date.now() >= deadline) throw err;
        await sleep(backoff(attempt));
      }
    }
  }

  /**
   * The cached view of the task when it can stand in for a read: written by this replica, live,
   * this caller's, with no pause due (expiring one is a write of its own, decided on a fresh read).
   */
  private cachedView(key: string, access: TaskAccess, settles: boolean): CachedTask | undefined {
    const view = this.cache.get(key);
    if (!view) return undefined;
    const { task } = view;
    const now = this.now();
    const usable =
      task.writeId !== undefined &&
      task.deletingAt === undefined &&
      !isExpired(task, now) &&
      // A refusal is decided on a fresh read (apply), never on the view.
      refusalOf(task, access) === undefined &&
      !(pauseDue(task, now) && !settles);
    if (usable) return view;
    this.cache.delete(key);
    return undefined;
  }

  private readRequests(task: TaskRecord, reads: Reads): Promise<RequestRecord[]> {
    if (reads === 'all') return this.store.listRequests(task.tenantId, task.taskId);
    const ids = [...new Set(reads(task).filter((id): id is string => id !== undefined))];
    const mine = (r: RequestRecord | undefined): r is RequestRecord => r !== undefined && r.taskId === task.taskId;
    // One id (a turn's own request, nearly always): one read, without Promise.all's promises around it.
    if (ids.length === 1) return this.store.getRequest(task.tenantId, ids[0]!).then((r) => (mine(r) ? [r] : []));
    return Promise.all(ids.map((id) => this.store.getRequest(task.tenantId, id))).then((found) => found.filter(mine).sort((a, b) => a.seq - b.seq));
  }

  private keepTrying(err: unknown, options: WriteOptions, deadline: number): boolean {
    const keep = !!options.persistent && err instanceof StateStoreUnavailableError && Date.now() < deadline && !options.persistent.stopped?.();
    // A failure waited out here never reaches a caller (the filter counts those): count it now.
    if (keep) this.telemetry?.recordStoreError((err as StateStoreUnavailableError).code);
    return keep;
  }

  /**
   * `ta.approvals.pending`: every write goes through here, so a pause is counted when a write
   * makes the task Paused and uncounted when one takes it out (decided, canceled, expired, edited).
   */
  private countPause(before: TaskRecord, after: TaskRecord): void {
    // A task marked for deletion waits for nothing any more, whatever its status says.
    const was = before.status === 'Paused' && !before.deletingAt;
    const is = after.status === 'Paused' && !after.deletingAt;
    if (was !== is) this.telemetry?.approvalsPending.add(is ? 1 : -1);
  }
}

/** Which requests a read or a transition reads with the task (Transition.reads). */
export type Reads = Transition<unknown>['reads'];

const NONE: Reads = () => [];

/**
 * The written requests as the store and the cache keep them: stamped with the tenant and frozen
 * (state-store.util `sealedFor`), once. Both take a record so sealed as it is, rather than each
 * making its own frozen copy of its nested values (a turn's messages, items, tool calls, model
 * calls and usage) when both keep it.
 */
function sealed(tenantId: string, requests: RequestRecord[]): RequestRecord[] {
  return requests.map((r) => sealedFor(r, tenantId));
}

function cacheKey(tenantId: string, taskId: string): string {
  return `${tenantId}\u0000${taskId}`;
}

/**
 * The requests a transition names, from a cached view, in `seq` order (as readRequests reads them
 * from the store). Searched from the newest: a transition names the running or the latest
 * requests, so a turn of a long conversation finds them at once instead of scanning every request.
 */
function named(view: CachedTask, ids: (string | undefined)[]): RequestRecord[] {
  const found: RequestRecord[] = [];
  for (const id of ids) {
    if (id === undefined) continue;
    for (let i = view.requests.length - 1; i >= 0; i--) {
      const r = view.requests[i]!;
      if (r.requestId !== id) continue;
      if (!found.includes(r)) found.push(r);
      break;
    }
  }
  return found.length > 1 ? found.sort((a, b) => a.seq - b.seq) : found;
}

function conflictBackoff(attempt: number): number {
  return Math.random() * Math.min(10 * 2 ** attempt, MAX_CONFLICT_BACKOFF_MS);
}

function backoff(attempt: number): number {
  const ms = Math.min(MAX_BACKOFF_MS, 50 * 2 ** attempt);
  return ms / 2 + (Math.random() * ms) / 2;
}
