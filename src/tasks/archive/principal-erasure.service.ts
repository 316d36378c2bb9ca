import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ARCHIVE, LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import type { ArchivePort } from '../../archive/archive.port';
import { TaskDeletionService } from '../task-deletion.service';
import { TaskReaderService } from '../writer/task-reader.service';
import { ArchiverService } from './archiver.service';

/** What one call of an erasure may do at most before it answers `in_progress` (the caller, or the resumer, calls again). */
export interface ErasureBounds {
  /** Live tasks one call deletes at most (each: a cancel if running, a mark, then batches of its requests). */
  tasks: number;
  /** Archive rows one step deletes at most (of events, and of task rows). */
  archiveBatch: number;
  /** Archive steps one call runs at most. */
  archiveSteps: number;
}

/** The bounds of one `DELETE /admin/principals/{oid}`: 1,000 live tasks, 50 steps of 1,000 archive rows. */
export const ERASURE_BOUNDS: Readonly<ErasureBounds> = { tasks: 1000, archiveBatch: 1000, archiveSteps: 50 };

export interface ErasureOutcome {
  oid: string;
  /** `completed`: nothing of the person is left (and, with an archive, the erasure is recorded); `in_progress`: call again. */
  status: 'completed' | 'in_progress';
  /** Live tasks this call deleted. */
  tasksDeleted: number;
  /** Archive event rows this call deleted. */
  eventsDeleted: number;
  /** The id of the erasure's one `principal_erased` row, when this call recorded it (or found it recorded under the same id). */
  auditEventId?: string;
}

/** Listing pages the live part reads (owner sessions, a session's tasks). */
const LIVE_PAGE = 100;
/** How often each replica looks for erasures left pending (a replica stopped mid-way), jittered to 75–100 %. */
export const ERASURE_RESUME_MS = 60_000;
/** A pending erasure younger than this is left to whoever is running it (a client calling again after a 202). */
const RESUME_GRACE_MS = 60_000;
/** Pending erasures one resume pass takes, and read when looking for one's start. */
const RESUME_BATCH = 10;
const PENDING_LOOKUP = 1000;
/** How long an erasure waits, at most, for this replica's archive queue to drain before erasing the archive (see settle). */
const SETTLE_MS = 2000;

/**
 * Erasure of a person (issue 23, item 7; docs/archive.md, Erasure): `DELETE /admin/principals/{oid}`
 * removes, in the caller's tenant only, every live task and session the person owns (every
 * agent's; a running request is canceled first, as a DELETE does; nothing of them is archived) and
 * every archive row of their tasks, leaving one content-free `principal_erased` row.
 *
 * In bounded calls (ERASURE_BOUNDS), each one resumable by calling again:
 * 1. The live store first (a catch-up finding the person's live tasks would archive them again):
 *    their sessions page by page, each session's tasks (half-deleted ones included), each erased
 *    (TaskDeletionService.eraseTask), until a pass over the sessions finds none; at most
 *    `bounds.tasks` a call. A call that stops there with an archive runs one archive step, which
 *    opens the erasure (its `erasures` row, pending until recorded) for the resumer.
 * 2. The archive: steps of `archiveBatch` rows until one finds fewer, then recordErasure under an
 *    id derived from the erasure's start (the same id on every replica and every retry, so the row
 *    is written once); an erasure no longer pending was recorded already.
 *
 * Every replica resumes erasures left pending (ArchivePort.pendingErasures) every ERASURE_RESUME_MS;
 * errors are logged, never thrown, and the timer never keeps the process alive.
 */
@Injectable()
export class PrincipalErasureService implements OnApplicationBootstrap, OnModuleDestroy {
  /** Erasures running in this process, by tenant and oid: a second one waits for the first. */
  private readonly running = new Map<string, Promise<ErasureOutcome>>();
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly reader: TaskReaderService,
    private readonly deletion: TaskDeletionService,
    private readonly archiver: ArchiverService,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(ARCHIVE) private readonly archive?: ArchivePort | null,
  ) {}

  onApplicationBootstrap(): void {
    if (this.archive) this.schedule(this.jittered());
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Erases `oid` from `tenantId`, at most `bounds` in this call (`in_progress`: call again). */
  async erase(tenantId: string, oid: string, bounds: ErasureBounds = ERASURE_BOUNDS): Promise<ErasureOutcome> {
    const key = `${tenantId}\u0000${oid}`;
    for (let prior = this.running.get(key); prior; prior = this.running.get(key)) await prior.catch(() => undefined);
    const run = this.run({ tenantId, ownerId: oid }, bounds);
    this.running.set(key, run);
    try {
      return await run;
    } finally {
      if (this.running.get(key) === run) this.running.delete(key);
    }
  }

  /** One resume pass (exposed for tests): erasures pending for longer than the grace, each run once more. */
  async resumePending(graceMs = RESUME_GRACE_MS): Promise<ErasureOutcome[]> {
    if (!this.archive) return [];
    const before = Date.now() - graceMs;
    const pending = (await this.archive.pendingErasures(RESUME_BATCH)).filter(
      (p) => Date.parse(p.startedAt) <= before && !this.running.has(`${p.tenantId}\u0000${p.oid}`),
    );
    const outcomes: ErasureOutcome[] = [];
    for (const p of pending) {
      if (this.stopped) break;
      outcomes.push(await this.erase(p.tenantId, p.oid));
    }
    return outcomes;
  }

  private async run(person: Principal, bounds: ErasureBounds): Promise<ErasureOutcome> {
    const { tenantId, ownerId: oid } = person;
    const outcome: ErasureOutcome = { oid, status: 'in_progress', tasksDeleted: 0, eventsDeleted: 0 };
    const archive = this.archive;
    const live = await this.eraseLive(person, bounds.tasks);
    outcome.tasksDeleted = live.deleted;
    if (!archive) return this.logged(person, live.more ? outcome : { ...outcome, status: 'completed' });
    if (live.deleted) await this.settle();
    if (live.more) {
      // One archive step opens the erasure (pending until recorded): the resumer of any replica finishes it if nobody calls again.
      outcome.eventsDeleted += (await archive.erasePrincipalBatch(tenantId, oid, bounds.archiveBatch)).events;
      return this.logged(person, outcome);
    }
    for (let step = 0; step < bounds.archiveSteps; step++) {
      const done = await archive.erasePrincipalBatch(tenantId, oid, bounds.archiveBatch);
      outcome.eventsDeleted += done.events;
      if (!done.done) continue;
      const listed = await archive.pendingErasures(PENDING_LOOKUP);
      const pending = listed.find((p) => p.tenantId === tenantId && p.oid === oid);
      // Not pending: recorded already (by this call's earlier attempt that lost its answer, or by another replica),
      // unless the list was cut (more than PENDING_LOOKUP older ones): then it cannot tell, and the next call looks again.
      if (!pending) return this.logged(person, listed.length < PENDING_LOOKUP ? { ...outcome, status: 'completed' } : outcome);
      const eventId = erasureEventId(tenantId, oid, pending.startedAt);
      const recorded = await archive.recordErasure(tenantId, oid, eventId);
      // Undefined: a row of the person arrived since the step (a drain or catch-up of their last task): step again.
      if (recorded) return this.logged(person, { ...outcome, status: 'completed', auditEventId: eventId });
    }
    return this.logged(person, outcome);
  }

  /**
   * The person's live tasks, every agent's, at most `budget` attempts: their sessions page by page,
   * each session's first page again and again until it is empty (the deleted ones leave it), then
   * another pass over the sessions, until a pass finds no task (a deletion may move the sessions'
   * cursor). `more` when the budget ran out.
   */
  private async eraseLive(person: Principal, budget: number): Promise<{ deleted: number; more: boolean }> {
    let attempts = 0;
    let deleted = 0;
    for (;;) {
      let found = 0;
      let cursor: string | undefined;
      do {
        const sessions = await this.reader.ownerSessions(person, { limit: LIVE_PAGE, ...(cursor ? { cursor } : {}) });
        for (const sessionId of sessions.items) {
          for (;;) {
            const tasks = (await this.reader.sessionTasks(person, sessionId, { limit: LIVE_PAGE, includeDeleting: true })).items;
            if (!tasks.length) break;
            for (const task of tasks) {
              if (attempts >= budget) return { deleted, more: true };
              attempts++;
              found++;
              if (await this.deletion.eraseTask(task)) deleted++;
            }
          }
        }
        cursor = sessions.nextCursor;
      } while (cursor);
      if (!found) return { deleted, more: false };
    }
  }

  /**
   * The deletion's own commits go through the archiver's queue (a version note of each task, which
   * would write the task's archive row again): waits, boundedly, for this replica's queue to drain
   * before erasing the archive. A row written after all the same makes recordErasure answer
   * undefined, and the erasure steps again.
   */
  private async settle(): Promise<void> {
    const until = Date.now() + SETTLE_MS;
    await sleep(10);
    while (this.archiver.stats().queued > 0 && Date.now() < until) await sleep(20);
    await sleep(20);
  }

  private logged(person: Principal, outcome: ErasureOutcome): ErasureOutcome {
    this.logger.info(
      {
        tenant_id: person.tenantId,
        erased_oid: outcome.oid,
        status: outcome.status,
        tasks_deleted: outcome.tasksDeleted,
        events_deleted: outcome.eventsDeleted,
      },
      outcome.status === 'completed' ? 'erasure: a person erased' : 'erasure: a person partly erased; call again',
    );
    return outcome;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pass(), delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    try {
      await this.resumePending();
    } catch (err) {
      if (!this.stopped) this.logger.warn({ err }, 'erasure resume failed; trying again on the next pass');
    }
    this.schedule(this.jittered());
  }

  private jittered(): number {
    return Math.round(ERASURE_RESUME_MS * (0.75 + Math.random() * 0.25));
  }
}

/** The id of an erasure's `principal_erased` row: the same on every replica and retry of that erasure, another for a later one. */
export function erasureEventId(tenantId: string, oid: string, startedAt: string): string {
  return `${tenantId}/principal/${oid}@${startedAt}/principal_erased`;
}
