import { createServer } from 'node:net';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { StateStoreUnavailableError } from '../../src/state/state.errors';
import { makeTask } from '../conformance/fixtures';
import { DYNAMODB_LOCAL, testDynamoDbEndpoint, uniqueName } from '../support/services';

/** A loopback port that accepts connections and never answers: a hung endpoint. */
async function silentEndpoint(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((s) => sockets.add(s));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function outcomesOf(store: DynamoDbStateStore) {
  const tenant = uniqueName('tenant');
  const task = makeTask(tenant);
  const calls = {
    getTask: () => store.getTask(tenant, task.taskId),
    listRequests: () => store.listRequests(tenant, task.taskId),
    getRequest: () => store.getRequest(tenant, 'r'),
    listSessionTasks: () => store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 10 }),
    commit: () => store.commit(tenant, { task, expectedVersion: 0 }),
    getIdempotencyEntry: () => store.getIdempotencyEntry(tenant, 'k'),
    ping: () => store.ping(),
  };
  // In parallel: each is bounded on its own, and the file stays fast.
  return Promise.all(
    Object.entries(calls).map(async ([name, call]) => {
      const started = Date.now();
      const error = await call().then(
        () => new Error(`${name} resolved`),
        (e: unknown) => e,
      );
      return { name, error, ms: Date.now() - started };
    }),
  );
}

describe('DynamoDbStateStore when DynamoDB cannot serve', () => {
  it('a hung endpoint: every method rejects with StateStoreUnavailableError within a bounded time', async () => {
    const endpoint = await silentEndpoint();
    const store = new DynamoDbStateStore({ table: 't', endpoint: endpoint.url, ...DYNAMODB_LOCAL, requestTimeoutMs: 500 });
    try {
      for (const { name, error, ms } of await outcomesOf(store)) {
        expect([name, error]).toEqual([name, expect.any(StateStoreUnavailableError)]);
        expect([name, ms < 3000]).toEqual([name, true]);
      }
    } finally {
      await store.close();
      await endpoint.close();
    }
  }, 15_000);

  it('a refused connection, and a missing table, are StateStoreUnavailableError too', async () => {
    const endpoint = await silentEndpoint();
    await endpoint.close(); // nothing listens on the port any more
    const refused = new DynamoDbStateStore({ table: 't', endpoint: endpoint.url, ...DYNAMODB_LOCAL });
    const noTable = new DynamoDbStateStore({ table: uniqueName('missing'), endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    try {
      for (const store of [refused, noTable]) {
        for (const { name, error, ms } of await outcomesOf(store)) {
          expect([name, error]).toEqual([name, expect.any(StateStoreUnavailableError)]);
          expect([name, ms < 3000]).toEqual([name, true]);
        }
      }
      await expect(noTable.ping()).rejects.toThrow(/does not exist/);
    } finally {
      await refused.close();
      await noTable.close();
    }
  }, 15_000);
});
