import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { describeStateStoreConformance } from '../conformance/state-store.conformance';

// One instance: the in-memory store cannot share data across instances (its "processes" are one).
const store = new MemoryStateStore();
afterAll(() => store.close());

describeStateStoreConformance('memory', {
  createStore: async () => store,
  // Its own instance, so its own data: the cases that need both stores' data shared skip that part.
  createArchiveStore: async () => new MemoryStateStore({ archiveIndex: true }),
  countStored: async (tenantId) => store.storedCount(tenantId),
});
