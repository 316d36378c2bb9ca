import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { HEADER_SK } from '../../src/state/backends/dynamodb/dynamodb-keys';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { RequestRecord, TaskRecord } from '../../src/state/state.entities';
import { isoAt, makeRequest, makeTask } from '../conformance/fixtures';
import { postgresStores } from '../support/postgres-stores';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';

/**
 * A deletion step that read the marked header, then lost the race: before it acted, another
 * process finished the deletion and a follow-on created the id anew, up to the very version that
 * was marked. The step must leave that new task whole (its header, requests, parts, stream log).
 * This happened in CI: a DELETE raced follow-ons, one of which finished the deletion itself
 * (TaskDeletionService.finishInterrupted), and the DELETE's own step then removed the new task's first
 * request.
 *
 * The pause sits where each backend reads the header in a step: Redis reads it, then runs one
 * script; PostgreSQL reads it, then calls one function (delete_batch) that acts only while the
 * header is still the one read; DynamoDB reads it, then sends several requests. The in-memory store
 * does a step at once.
 */

/** Arms `store`: its next deletion step runs `race` right after reading the task header. */
type Arm = (store: StateStore, race: () => Promise<void>) => void;

interface Backend {
  name: string;
  setup(): Promise<void>;
  stores(): [StateStore, StateStore];
  arm: Arm;
  teardown(): Promise<void>;
}

/** Redis and PostgreSQL: the step reads the header through getTaskForDeletion, then acts once. */
const armHeaderRead: Arm = (store, race) => {
  const s = store as RedisStateStore | PostgresStateStore;
  const read = s.getTaskForDeletion.bind(s);
  s.getTaskForDeletion = async (tenantId, taskId) => {
    s.getTaskForDeletion = read;
    const task = await read(tenantId, taskId);
    await race();
    return task;
  };
};

const redisPrefix = `${uniqueName('ta-race')}:`;
const redis: Backend = (() => {
  let pair: [RedisStateStore, RedisStateStore];
  return {
    name: 'redis',
    async setup() {
      pair = [new RedisStateStore({ url: testRedisUrl(), keyPrefix: redisPrefix }), new RedisStateStore({ url: testRedisUrl(), keyPrefix: redisPrefix })];
    },
    stores: () => pair,
    arm: armHeaderRead,
    teardown: async () => {
      await Promise.all(pair.map((s) => s.close()));
    },
  };
})();

const postgres: Backend = (() => {
  let pair: [PostgresStateStore, PostgresStateStore] | undefined;
  return {
    name: 'postgres',
    async setup() {
      const { store } = await postgresStores('ta_race');
      pair = [store(), store()];
    },
    stores: () => pair!,
    arm: armHeaderRead,
    teardown: async () => {
      await Promise.all((pair ?? []).map((s) => s.close()));
    },
  };
})();

const table = uniqueName('ta-race');
const dynamodb: Backend = (() => {
  let pair: [DynamoDbStateStore, DynamoDbStateStore];
  const races = new Map<StateStore, () => Promise<void>>();
  const isHeaderGet = (input: { Key?: { sk?: unknown } }) => {
    const sk = input.Key?.sk as string | { S?: string } | undefined;
    return sk === HEADER_SK || (typeof sk === 'object' && sk?.S === HEADER_SK);
  };
  return {
    name: 'dynamodb',
    async setup() {
      await createTestStateTable(table);
      pair = [0, 1].map(() => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL })) as [
        DynamoDbStateStore,
        DynamoDbStateStore,
      ];
      for (const store of pair) {
        // After the store's header read (a GetItem of the header), the armed race runs, then the read returns.
        const wire = store.dynamoDbWire;
        const send = wire.send.bind(wire);
        wire.send = async (command) => {
          const result = await send(command);
          const race = races.get(store);
          if (race && command.operation === 'GetItem' && isHeaderGet(command.input as { Key?: { sk?: unknown } })) {
            races.delete(store);
            await race();
          }
          return result;
        };
      }
    },
    stores: () => pair,
    arm: (store, race) => races.set(store, race),
    teardown: async () => {
      await Promise.all(pair.map((s) => s.close()));
    },
  };
})();

/** What the follow-on puts in the new task, besides its header. */
const SHAPES = ['a request', 'a request stored in parts', 'a request and its stream log', 'nothing else'] as const;
type Shape = (typeof SHAPES)[number];

async function drain(store: StateStore, tenant: string, taskId: string): Promise<number> {
  for (let calls = 1; calls <= 20; calls++) if (await store.deleteTaskBatch(tenant, taskId, 25)) return calls;
  throw new Error(`task ${taskId} still not deleted after 20 batches`);
}

describe.each([redis, postgres, dynamodb])('a deletion step that lost the race to a new task under the same id ($name)', (backend) => {
  beforeAll(() => backend.setup(), 60_000);
  afterAll(() => backend.teardown());

  it.each(SHAPES)('leaves the new task whole when it holds %s', async (shape: Shape) => {
    const [slow, other] = backend.stores();
    const tenant = uniqueName('tenant');
    const old = makeTask(tenant, { requestCount: 1 });
    const oldRequest = makeRequest(old, 0);
    const seeded = await slow.commit(tenant, { task: old, expectedVersion: 0, requests: [oldRequest] });
    const marked = await slow.commit(tenant, { task: { ...seeded, deletingAt: isoAt(59), writeId: 'mark' }, expectedVersion: seeded.version });

    let fresh: TaskRecord | undefined;
    const freshRequests: RequestRecord[] = [];
    backend.arm(slow, async () => {
      // Another process finishes the deletion, and a follow-on creates the id anew, up to the marked version.
      await drain(other, tenant, old.taskId);
      const task = makeTask(tenant, { taskId: old.taskId, sessionId: old.sessionId, ownerId: old.ownerId, writeId: 'new-1' });
      if (shape !== 'nothing else') {
        const big = shape === 'a request stored in parts' ? { output: 'x'.repeat(600 * 1024) } : {};
        freshRequests.push(makeRequest(task, 0, big));
      }
      let stored = await other.commit(tenant, { task: { ...task, requestCount: freshRequests.length }, expectedVersion: 0, requests: freshRequests });
      while (stored.version < marked.version) {
        stored = await other.commit(tenant, { task: { ...stored, writeId: `new-${stored.version + 1}` }, expectedVersion: stored.version });
      }
      if (shape === 'a request and its stream log') await other.appendStreamEvents(tenant, old.taskId, 0, [{ n: 1, event: 'message', data: { text: 'kept' } }]);
      fresh = stored;
    });

    await drain(slow, tenant, old.taskId);

    expect(fresh).toMatchObject({ version: marked.version, writeId: `new-${marked.version}` });
    expect(await other.getTask(tenant, old.taskId)).toEqual(fresh);
    expect(await other.listRequests(tenant, old.taskId)).toEqual(freshRequests);
    for (const r of freshRequests) expect(await other.getRequest(tenant, r.requestId)).toEqual(r);
    expect(await other.getRequest(tenant, oldRequest.requestId)).toBeUndefined();
    const events = await other.readStreamEvents(tenant, old.taskId, 0, 0);
    expect(events).toEqual(shape === 'a request and its stream log' ? [{ n: 1, event: 'message', data: { text: 'kept' } }] : []);
    expect((await other.listSessionTasks(tenant, old.ownerId, old.sessionId, { limit: 10 })).items.map((t) => t.taskId)).toEqual([old.taskId]);
    expect((await other.listOwnerSessions(tenant, old.ownerId, { limit: 10 })).items).toEqual([old.sessionId]);
  });
});

describe("a stream append that lost the race to the task's deletion (dynamodb; Redis appends in one script, PostgreSQL in one statement under the header's row lock)", () => {
  beforeAll(() => dynamodb.setup(), 60_000);
  afterAll(() => dynamodb.teardown());

  it('leaves an item no later task of the id is held back by: the new task logs and replays its own stream', async () => {
    const [slow, other] = dynamodb.stores();
    const tenant = uniqueName('tenant');
    const old = makeTask(tenant, { requestCount: 4 });
    const seeded = await slow.commit(tenant, { task: old, expectedVersion: 0 });
    dynamodb.arm(slow, async () => {
      // The append read the task as live; before its write, a DELETE marks and removes the task.
      await other.commit(tenant, { task: { ...seeded, deletingAt: isoAt(59), writeId: 'mark' }, expectedVersion: seeded.version });
      await drain(other, tenant, old.taskId);
    });
    await slow.appendStreamEvents(tenant, old.taskId, 3, [{ n: 1, event: 'late', data: {} }]);

    // A follow-on creates the id anew: its first request's log starts at seq 0, below the late item.
    const fresh = makeTask(tenant, { taskId: old.taskId, requestCount: 1 });
    await other.commit(tenant, { task: fresh, expectedVersion: 0 });
    const events = [
      { n: 1, event: 'message', data: { text: 'mine' } },
      { n: 2, event: 'done', data: {} },
    ];
    await other.appendStreamEvents(tenant, old.taskId, 0, events.slice(0, 1));
    await other.appendStreamEvents(tenant, old.taskId, 0, events);

    expect(await other.readStreamEvents(tenant, old.taskId, 0, 0)).toEqual(events);
    expect(await other.readStreamEvents(tenant, old.taskId, 3, 0)).toEqual([]);
    // Its deletion takes the late item too.
    const current = (await other.getTask(tenant, old.taskId))!;
    await other.commit(tenant, { task: { ...current, deletingAt: isoAt(59) }, expectedVersion: current.version });
    await drain(other, tenant, old.taskId);
    expect(await (other as DynamoDbStateStore).getTaskForDeletion(tenant, old.taskId)).toBeUndefined();
  });
});
