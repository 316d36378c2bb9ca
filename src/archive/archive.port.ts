import { ArchiveEvent } from './archive-event';
import type { TimelineKey } from './timeline';
import type { ArchiveFilter, ArchivePage, ArchivePageRequest, ArchivedTask } from './store/archive-query';
import type { TaskNote } from './store/archive-write';
import type { ErasureStep, PendingErasure } from './store/archive-erasure';
import type { ArchivedEvent } from './store/archive-rows';

/** The task version an insert brought the archive up to (its `tasks` row). */
export type ArchivedVersion = TaskNote;

/**
 * The audit archive as the task side uses it (the PostgreSQL archive, src/archive/store/,
 * implements it): so services and tests know nothing of SQL, and the ARCHIVE token is typed by it.
 */
export interface ArchivePort {
  /** Stores the events not stored yet (by event id) and raises each task's archived version; one round trip. Returns the rows inserted. */
  insertEvents(events: ArchiveEvent[], versions: ArchivedVersion[]): Promise<number>;
  /** The task left the live store: its rows stay, marked archived at `at`. */
  markDeleted(tenantId: string, taskId: string, at: Date): Promise<unknown>;
  /** A tenant's events in time order, narrowed by the filter, one keyset page. */
  listEvents(filter: ArchiveFilter, page: ArchivePageRequest): Promise<ArchivePage>;
  /** One task's events in timeline order (src/archive/timeline.ts), at most `limit` after `after`. */
  taskTimeline(tenantId: string, taskId: string, page: { limit: number; after?: TimelineKey }): Promise<ArchivePage>;
  /** The archive's row of a task (its owner, whether it was deleted), or undefined. */
  taskInfo(tenantId: string, taskId: string): Promise<ArchivedTask | undefined>;
  /** One bounded retention step: at most `batchSize` event rows older than `cutoff` (and deleted tasks' rows); returns the rows removed. */
  purgeOlderThan(cutoff: Date, batchSize: number): Promise<number>;
  /** One bounded step of erasing a person from a tenant (their events and task rows); `done` when it found fewer than a batch. */
  erasePrincipalBatch(tenantId: string, oid: string, batchSize: number): Promise<ErasureStep>;
  /** Ends an erasure with its one content-free `principal_erased` row (the same row again for the same id); undefined while rows remain. */
  recordErasure(tenantId: string, oid: string, eventId: string): Promise<ArchivedEvent | undefined>;
  /** Erasures started and not recorded (a replica stopped mid-way), oldest first. */
  pendingErasures(limit?: number): Promise<PendingErasure[]>;
  /** Resolves when the archive answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
