import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import type { Logger } from 'pino';
import { ARCHIVE, ENV_CONFIG, LOGGER, TELEMETRY } from '../../app.tokens';
import { eventsOfRequest, eventsOfTask, taskDeletedEvent } from '../../archive/archive-events';
import { ArchiveEvent } from '../../archive/archive-event';
import type { ArchivePort, ArchivedVersion } from '../../archive/archive.port';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { ArchiveEntry } from '../../state/state-store';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import type { Telemetry } from '../../telemetry/telemetry';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';

/** Tasks one drain writes at most (one INSERT, then one markArchived on the live store). */
export const ARCHIVE_DRAIN_BATCH = 100;
/**
 * How long a change waits before its drain: the commits of those milliseconds (a turn's admit and
 * its finish, other tasks' turns) go out in one insert and one clear of the index, instead of one
 * each. The lag it adds is this, not more.
 */
export const ARCHIVE_DRAIN_DELAY_MS = 25;
/** Entries of the archive index one catch-up page takes. */
const CATCHUP_PAGE = 100;
/** Pages one catch-up pass takes at most before it waits for the next pass (a backlog then drains at 1,000 tasks a pass). */
const CATCHUP_PAGES = 10;

/** A task changed by commits of this replica, waiting to be archived. */
interface Pending {
  tenantId: string;
  task: TaskRecord;
  /** The records the commits wrote, by seq: the latest of each. */
  requests: Map<number, RequestRecord>;
  /** When it was first queued (ms, this process's clock): the lag. */
  since: number;
  /**
   * The task's version before the first commit queued here, while the queued commits are consecutive
   * (undefined once another replica's commit may lie between): the drain clears the task's index
   * entry only when the archive holds every version up to it (`archivedUpTo`), as its events are
   * only those of these commits. Otherwise the entry stays, for the catch-up, which derives the
   * whole task: a commit another replica left unarchived (its drain failed, or it was killed) is
   * never cleared by a later commit's drain.
   */
  base?: number;
}

export interface ArchiverStats {
  /** Tasks waiting in this replica's queue. */
  queued: number;
  /** Seconds since the oldest change this replica knows unarchived (its queue, and the index as the last catch-up pass saw it). */
  lagSeconds: number;
  /** Commits not queued because the queue was full (the catch-up takes them). */
  dropped: number;
}

/**
 * Moves what the live store holds into the audit archive (TA_ARCHIVE_URL; docs/archive.md),
 * without adding anything to a turn's answer and without ever failing one:
 *
 * 1. **After each commit** (TaskWriterService.onCommit) the task and the records the commit wrote
 *    go on a bounded queue (TA_ARCHIVE_QUEUE_MAX tasks; a commit to a task already queued only
 *    replaces its records), and the commit's caller goes on. A drain, ARCHIVE_DRAIN_DELAY_MS later, derives the events of up to ARCHIVE_DRAIN_BATCH tasks (src/archive/archive-events.ts),
 *    inserts them in one statement (each event once, by its id), then clears the entries, in the
 *    live store's archive index, of those tasks whose every version the archive now holds (in one
 *    call; a task another replica committed in between is left to the catch-up: Pending.base).
 * 2. **The catch-up**, every TA_ARCHIVE_CATCHUP_MS on every replica: what a full queue dropped, what
 *    a failed insert left, and what a replica killed before its drain left behind are all still in
 *    the archive index (StateStore.listUnarchived: written by the commit itself, atomically). Entries
 *    older than TA_ARCHIVE_GRACE_MS are read back (the task and every request), derived and inserted
 *    the same way. Replicas racing on an entry insert the same rows: the ids make that harmless.
 * 3. **Deletion** archives first (`beforeDeletion`): a task is derived and inserted before it is
 *    marked for deletion, so its records are never gone before the archive holds them; an archive
 *    that does not answer fails the DELETE (503 ARCHIVE_UNAVAILABLE) with nothing deleted.
 *
 * An archive that is down costs the turns nothing: drains fail (logged once per outage, counted),
 * the queue stays bounded, and the catch-up brings the archive up to date once it answers.
 */
@Injectable()
export class ArchiverService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly queue = new Map<string, Pending>();
  private readonly maxQueued: number;
  private readonly maxPayloadBytes: number;
  private readonly catchupMs: number;
  private readonly graceMs: number;
  private draining?: Promise<void>;
  private drainTimer?: NodeJS.Timeout;
  private catchupTimer?: NodeJS.Timeout;
  private cursor?: string;
  private stopped = false;
  private failing = false;
  private dropped = 0;
  /** The oldest index entry the last catch-up pass found (store clock, ms), or undefined when it found none. */
  private oldestIndexed?: number;
  /** Tasks whose every version up to `version` this replica knows archived (by a complete drain or the catch-up); at most TA_ARCHIVE_QUEUE_MAX, oldest forgotten first. */
  private readonly archivedUpTo = new Map<string, { createdAt: string; version: number }>();

  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(ARCHIVE) private readonly archive?: ArchivePort | null,
    @Optional() @Inject(TELEMETRY) private readonly telemetry?: Telemetry,
  ) {
    const a = env.archive;
    this.maxQueued = a?.queueMax ?? 0;
    this.maxPayloadBytes = a?.maxPayloadBytes ?? 0;
    this.catchupMs = a?.catchupMs ?? 0;
    this.graceMs = a?.graceMs ?? 0;
  }

  get enabled(): boolean {
    return !!this.archive;
  }

  onApplicationBootstrap(): void {
    if (!this.archive) return;
    this.writer.onCommit((tenantId, task, requests) => this.changed(tenantId, task, requests));
    this.telemetry?.observeArchive(() => this.stats());
    if (this.catchupMs > 0) this.scheduleCatchup(this.jittered());
  }

  async onModuleDestroy(): Promise<void> {
    // What is queued goes out now (bounded by the archive's statement timeout); the rest is the catch-up's.
    clearTimeout(this.catchupTimer);
    this.stopped = true;
    clearTimeout(this.drainTimer);
    await this.draining;
    if (this.queue.size) await this.drain().catch(() => undefined);
  }

  stats(): ArchiverStats {
    let oldest = Date.now();
    for (const p of this.queue.values()) oldest = Math.min(oldest, p.since);
    const indexed = this.oldestIndexed === undefined ? 0 : this.writer.now() - this.oldestIndexed;
    return { queued: this.queue.size, lagSeconds: Math.max(Date.now() - oldest, indexed, 0) / 1000, dropped: this.dropped };
  }

  /** A commit of this replica (TaskWriterService.onCommit): queued, never waited for. */
  changed(tenantId: string, task: TaskRecord, requests: RequestRecord[]): void {
    const key = `${tenantId}\u0000${task.taskId}`;
    let pending = this.queue.get(key);
    if (!pending) {
      if (this.queue.size >= this.maxQueued) return void this.dropped++;
      pending = { tenantId, task, requests: new Map(), since: Date.now(), base: task.version - 1 };
      this.queue.set(key, pending);
    } else if (pending.task.createdAt !== task.createdAt) {
      // A task created again under the id (after a deletion) starts over: its old records are not its.
      pending.requests.clear();
      pending.base = task.version - 1;
    } else if (task.version !== pending.task.version + 1) pending.base = undefined;
    pending.task = task;
    for (const r of requests) pending.requests.set(r.seq, r);
    this.scheduleDrain();
  }

  /**
   * Archives a task before its deletion marks it (TaskDeletionService): every event of it, and the
   * archive row it is deleted from. 503 ARCHIVE_UNAVAILABLE when the archive does not answer.
   */
  async beforeDeletion(tenantId: string, taskId: string): Promise<void> {
    if (!this.archive) return;
    const found = await this.reader.archivable(tenantId, taskId);
    if (!found) return;
    await this.write(eventsOfTask(found.task, found.requests, this.maxPayloadBytes), [versionOf(found.task)]);
  }

  /** The task's deletion, once it is marked: its `task_deleted` row, and its rows marked archived. */
  async deleted(task: TaskRecord, at: string): Promise<void> {
    if (!this.archive) return;
    await this.write([taskDeletedEvent(task, at, task.ownerId)], []);
    await this.guard(() => this.archive!.markDeleted(task.tenantId, task.taskId, new Date(at)));
  }

  /** Extra events (a session's deletion, a refined plan) written at once; 503 ARCHIVE_UNAVAILABLE when the archive does not answer. */
  async write(events: ArchiveEvent[], versions: ArchivedVersion[]): Promise<void> {
    if (!this.archive || (!events.length && !versions.length)) return;
    await this.guard(() => this.archive!.insertEvents(events, versions));
  }

  /** One catch-up pass (exposed for tests): pages of the archive index older than the grace, each task archived. */
  async catchUp(): Promise<{ archived: number; more: boolean }> {
    let archived = 0;
    const before = this.writer.now() - this.graceMs;
    for (let page = 0; page < CATCHUP_PAGES; page++) {
      const listed = await this.reader.unarchived(before, { limit: CATCHUP_PAGE, cursor: this.cursor });
      if (page === 0 && !this.cursor) this.oldestIndexed = listed.items[0]?.changedAt;
      this.cursor = listed.nextCursor;
      const entries = listed.items.filter((e) => !this.queue.has(`${e.tenantId}\u0000${e.taskId}`));
      archived += await this.archiveEntries(entries);
      if (!listed.nextCursor) return { archived, more: false };
    }
    return { archived, more: true };
  }

  private async archiveEntries(entries: ArchiveEntry[]): Promise<number> {
    if (!entries.length) return 0;
    const events: ArchiveEvent[] = [];
    const versions: ArchivedVersion[] = [];
    const done: { tenantId: string; taskId: string; version: number }[] = [];
    const whole: TaskRecord[] = [];
    for (const e of entries) {
      const found = await this.reader.archivable(e.tenantId, e.taskId);
      // Gone or expired (nothing left to derive), or marked for deletion (archived before its mark): clear the entry.
      if (!found) {
        done.push(e);
        continue;
      }
      events.push(...eventsOfTask(found.task, found.requests, this.maxPayloadBytes));
      versions.push(versionOf(found.task));
      whole.push(found.task);
      done.push({ tenantId: e.tenantId, taskId: e.taskId, version: found.task.version });
    }
    await this.archive!.insertEvents(events, versions);
    for (const task of whole) this.archivedWhole(task);
    await this.writer.markArchived(done);
    return versions.length;
  }

  /** Every version of `task` up to its own is in the archive. */
  private archivedWhole(task: TaskRecord): void {
    const key = `${task.tenantId}\u0000${task.taskId}`;
    this.archivedUpTo.delete(key);
    this.archivedUpTo.set(key, { createdAt: task.createdAt, version: task.version });
    if (this.archivedUpTo.size > Math.max(this.maxQueued, 1)) this.archivedUpTo.delete(this.archivedUpTo.keys().next().value!);
  }

  private scheduleDrain(): void {
    if (this.drainTimer || this.draining || this.stopped) return;
    this.drainTimer = setTimeout(() => {
      this.drainTimer = undefined;
      this.draining = this.drain()
        .catch(() => undefined)
        .finally(() => {
          this.draining = undefined;
          if (this.queue.size && !this.failing) this.scheduleDrain();
        });
    }, ARCHIVE_DRAIN_DELAY_MS);
    this.drainTimer.unref();
  }

  /** Writes up to ARCHIVE_DRAIN_BATCH queued tasks: one insert, then one clear of their index entries. */
  private async drain(): Promise<void> {
    const batch: Pending[] = [];
    for (const [key, p] of this.queue) {
      batch.push(p);
      this.queue.delete(key);
      if (batch.length === ARCHIVE_DRAIN_BATCH) break;
    }
    const events = batch.flatMap((p) => [...p.requests.values()].flatMap((r) => eventsOfRequest(p.task, r, this.maxPayloadBytes)));
    let complete: Pending[];
    try {
      await this.archive!.insertEvents(
        events,
        batch.map((p) => versionOf(p.task)),
      );
      // Only where the archive now holds every version of the task: the others' entries stay for the catch-up.
      complete = batch.filter((p) => {
        const upTo = this.archivedUpTo.get(`${p.tenantId}\u0000${p.task.taskId}`);
        return p.base === 0 || (p.base !== undefined && upTo?.createdAt === p.task.createdAt && upTo.version === p.base);
      });
      for (const p of complete) this.archivedWhole(p.task);
      if (this.failing) this.logger.info('audit archive answers again; the catch-up archives what it missed');
      this.failing = false;
    } catch (err) {
      // Dropped here, not lost: every change is still in the archive index, for the catch-up.
      if (!this.failing) this.logger.warn({ err }, 'audit archive did not take a batch; the catch-up will archive it');
      this.failing = true;
      this.telemetry?.recordArchiveFailure();
      return;
    }
    if (!complete.length) return;
    await this.writer.markArchived(complete.map((p) => ({ tenantId: p.tenantId, taskId: p.task.taskId, version: p.task.version }))).catch((err: unknown) => {
      // The entries stay listed: the catch-up derives those tasks again and finds their rows there.
      this.logger.warn({ err }, 'could not clear archive index entries; the catch-up will');
    });
  }

  private scheduleCatchup(delayMs: number): void {
    if (this.stopped) return;
    this.catchupTimer = setTimeout(() => void this.catchupPass(), delayMs);
    this.catchupTimer.unref();
  }

  private async catchupPass(): Promise<void> {
    let more = false;
    try {
      ({ more } = await this.catchUp());
      if (this.failing && !this.queue.size) this.failing = false;
    } catch (err) {
      if (!this.stopped) this.logger.warn({ err }, 'audit archive catch-up failed; trying again on the next pass');
    }
    if (this.queue.size) this.scheduleDrain();
    this.scheduleCatchup(more ? 100 : this.jittered());
  }

  private jittered(): number {
    return Math.round(this.catchupMs * (0.75 + Math.random() * 0.25));
  }

  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      this.telemetry?.recordArchiveFailure();
      throw new DomainError(ErrorCode.ARCHIVE_UNAVAILABLE, 'The audit archive did not answer; nothing was changed. Try again.', { retryAfter: 5, cause: err });
    }
  }
}

function versionOf(task: TaskRecord): ArchivedVersion {
  return { tenantId: task.tenantId, taskId: task.taskId, ownerId: task.ownerId, sessionId: task.sessionId, agent: task.agent, version: task.version };
}
