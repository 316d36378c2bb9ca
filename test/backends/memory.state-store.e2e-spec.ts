import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { describeStateStoreConformance } from '../conformance/state-store.conformance';

// One instance: the in-memory store cannot share data across instances (its "processes" are one).
const store = new MemoryStateStore();
afterAll(() => store.close());

describeStateStoreConformance('memory', { createStore: async () => store, countStored: async (tenantId) => store.storedCount(tenantId) });
