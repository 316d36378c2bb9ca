import { randomUUID } from 'node:crypto';
import { StateStore } from '../../src/state/state-store';
import { archiveIndexCases } from './cases/archive-index.case';
import { concurrentCommitCases } from './cases/concurrent-commit.case';
import { createConflictCases } from './cases/create-conflict.case';
import { deletionCases } from './cases/deletion.case';
import { expectedWriteIdCases } from './cases/expected-write-id.case';
import { expiryCases } from './cases/expiry.case';
import { idempotencyCases } from './cases/idempotency.case';
import { largeRequestCases } from './cases/large-request.case';
import { leaseCases } from './cases/lease.case';
import { leaseIndexCases } from './cases/lease-index.case';
import { missingCases } from './cases/missing.case';
import { requestIndependenceCases } from './cases/request-independence.case';
import { roundTripCases } from './cases/round-trip.case';
import { sessionListingCases } from './cases/session-listing.case';
import { staleVersionCases } from './cases/stale-version.case';
import { streamEventsCases } from './cases/stream-events.case';
import { tenantIsolationCases } from './cases/tenant-isolation.case';

/**
 * How a backend plugs into the shared suite (a few lines per backend, in test/backends/).
 * Cases isolate themselves with a fresh tenant id each, so a backend needs no flushing between them.
 */
export interface StateStoreInitializer {
  /** Once before the cases: connect, create the table. */
  setup?(): Promise<void>;
  /**
   * A store instance over the same data as every other one this initializer made. Separate
   * instances stand in for separate processes (own connections); the in-memory backend, which
   * cannot share data across instances, returns one instance every time.
   */
  createStore(): Promise<StateStore>;
  /**
   * A store instance built with `archiveIndex: true` (StateStore.listUnarchived), over the same data
   * as the others where the backend can share it (the in-memory one cannot: its own instance).
   */
  createArchiveStore(): Promise<StateStore>;
  /** Once after the cases: close what setup and createStore opened. */
  teardown?(): Promise<void>;
  /** The stored bytes of one request record, where the backend can show them (byte-level checks). */
  rawRequest?(tenantId: string, taskId: string, seq: number): Promise<string | undefined>;
  /** How many keys or items of one tenant the backend holds (deletion leaves none), where it can tell. */
  countStored?(tenantId: string): Promise<number>;
}

export interface ConformanceContext {
  /** The store under test. */
  readonly store: StateStore;
  /** `n` store instances over the same data (see createStore); reused across cases. */
  stores(n: number): Promise<StateStore[]>;
  /** The store built with `archiveIndex: true` (see createArchiveStore); one, reused across cases. */
  archiveStore(): Promise<StateStore>;
  /** A tenant id no other case uses. */
  tenant(): string;
  readonly initializer: StateStoreInitializer;
}

export type ConformanceCases = (ctx: ConformanceContext) => void;

const CASES: ConformanceCases[] = [
  roundTripCases,
  missingCases,
  createConflictCases,
  staleVersionCases,
  expectedWriteIdCases,
  concurrentCommitCases,
  tenantIsolationCases,
  sessionListingCases,
  expiryCases,
  requestIndependenceCases,
  leaseCases,
  leaseIndexCases,
  archiveIndexCases,
  deletionCases,
  streamEventsCases,
  largeRequestCases,
  idempotencyCases,
];

/** Runs every behaviour of the StateStore contract (src/state/state-store.ts) against one backend. */
export function describeStateStoreConformance(name: string, initializer: StateStoreInitializer): void {
  describe(`StateStore conformance: ${name}`, () => {
    const pool: StateStore[] = [];
    let archive: Promise<StateStore> | undefined;
    const ctx: ConformanceContext = {
      get store() {
        return pool[0];
      },
      async stores(n) {
        while (pool.length < n) pool.push(await initializer.createStore());
        return pool.slice(0, n);
      },
      archiveStore() {
        archive ??= initializer.createArchiveStore();
        return archive;
      },
      tenant: () => `tenant-${randomUUID()}`,
      initializer,
    };

    beforeAll(async () => {
      await initializer.setup?.();
      await ctx.stores(1);
    }, 60_000);

    afterAll(async () => {
      const stores = new Set(pool);
      if (archive) stores.add(await archive);
      await Promise.all([...stores].map((s) => s.close()));
      await initializer.teardown?.();
    });

    for (const cases of CASES) cases(ctx);
  });
}
