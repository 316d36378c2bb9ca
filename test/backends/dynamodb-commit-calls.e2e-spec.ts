import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { dynamoDbCountingProxy, ROUND_TRIPS, StoreCounter } from '../../bench/store-counters';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { HEADER_SK, taskPk } from '../../src/state/backends/dynamodb/dynamodb-keys';
import { VersionConflictError } from '../../src/state/state.errors';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, uniqueName } from '../support/services';

/**
 * What one commit costs in DynamoDB calls (issue 14), counted by the benchmark's counting proxy in
 * front of DynamoDB Local: a store commits from the header it last wrote or read itself without
 * reading it again, and reads a request item only when the header says it is stored in parts.
 */
const table = uniqueName('ta-calls');
let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let proxy: StoreCounter & { url: string };
const stores: DynamoDbStateStore[] = [];
const newStore = (options: { archiveIndex?: boolean } = {}) => {
  const store = new DynamoDbStateStore({ table, endpoint: proxy.url, ...DYNAMODB_LOCAL, ...options });
  stores.push(store);
  return store;
};

/** The calls `fn` made, by operation (round trips left out). */
async function calls(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await proxy.snapshot();
  await fn();
  const after = await proxy.snapshot();
  const delta: Record<string, number> = {};
  for (const [op, n] of Object.entries(after)) if (op !== ROUND_TRIPS && n !== (before[op] ?? 0)) delta[op] = n - (before[op] ?? 0);
  return delta;
}

beforeAll(async () => {
  client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
  doc = DynamoDBDocumentClient.from(client);
  await createTestStateTable(table);
  proxy = await dynamoDbCountingProxy(testDynamoDbEndpoint());
}, 60_000);
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await proxy.close();
  client.destroy();
});

describe('DynamoDbStateStore commit calls', () => {
  it('a create is one transaction, and each follow-on commit of the same store one more, reading nothing', async () => {
    const store = newStore();
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant, { expiresAt: new Date(Date.now() + 600_000).toISOString(), writeId: randomUUID() });

    expect(await calls(() => store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)] }))).toEqual({ TransactWriteItems: 1 });
    const next = { ...task, requestCount: 2, writeId: randomUUID() };
    const follow = () => store.commit(tenant, { task: next, expectedVersion: 1, expectedWriteId: task.writeId, requests: [makeRequest(task, 1)] });
    expect(await calls(follow)).toEqual({ TransactWriteItems: 1 });
    const done = () => store.commit(tenant, { task: { ...next, status: 'Completed', writeId: 'w3' }, expectedVersion: 2, expectedWriteId: next.writeId });
    expect(await calls(done)).toEqual({ TransactWriteItems: 1 });
    expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 3, writeId: 'w3', status: 'Completed' });
  });

  it('a store that has not seen the task reads its header once; after a lost race, it commits from what the failure returned', async () => {
    const [mine, other] = [newStore(), newStore()];
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    await other.commit(tenant, { task, expectedVersion: 0 });

    expect(await calls(() => mine.commit(tenant, { task, expectedVersion: 1 }))).toEqual({ GetItem: 1, TransactWriteItems: 1 });
    await other.commit(tenant, { task, expectedVersion: 2 });
    // Its own view (version 2) is stale: the condition fails, and the failure carries the header.
    expect(await calls(() => expect(mine.commit(tenant, { task, expectedVersion: 2 })).rejects.toBeInstanceOf(VersionConflictError))).toEqual({
      TransactWriteItems: 1,
    });
    expect(await calls(() => mine.commit(tenant, { task, expectedVersion: 3 }))).toEqual({ TransactWriteItems: 1 });
  });

  it('reads and deletes the parts of a request it replaces only when the header says it has parts', async () => {
    const store = newStore();
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    const big = makeRequest(task, 0, { output: 'x'.repeat(800_000) });
    const small = makeRequest(task, 1);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [big, small] });

    // Inline over inline: nothing to delete. Inline over parts: the three old parts go, unread.
    expect(await calls(() => store.commit(tenant, { task, expectedVersion: 1, requests: [{ ...small, output: 'b' }] }))).toEqual({ TransactWriteItems: 1 });
    expect(await calls(() => store.commit(tenant, { task, expectedVersion: 2, requests: [{ ...big, output: 'short' }] }))).toEqual({
      TransactWriteItems: 1,
      DeleteItem: 3,
    });
    expect(await partsLeft(tenant, task.taskId)).toEqual([]);
    expect(await store.listRequests(tenant, task.taskId)).toEqual([
      { ...big, output: 'short' },
      { ...small, output: 'b' },
    ]);
  });

  it('a header written before it recorded parts and writeIds (older data) still gets its old parts deleted and its writeId checked', async () => {
    const [writer, reader] = [newStore(), newStore()];
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant, { writeId: 'w1' });
    const big = makeRequest(task, 0, { output: 'x'.repeat(800_000) });
    await writer.commit(tenant, { task, expectedVersion: 0, requests: [big] });
    // As an older release wrote it: the writeId only inside `data`, no record of parts.
    const key = { pk: taskPk(tenant, task.taskId), sk: HEADER_SK };
    const { Item: header } = await doc.send(new GetCommand({ TableName: table, Key: key }));
    const { writeId: _w, splits: _s, ...legacy } = header!;
    expect([_w, _s]).toEqual(['w1', { '0': expect.objectContaining({ parts: 3 }) }]);
    await doc.send(new PutCommand({ TableName: table, Item: legacy }));

    await expect(reader.commit(tenant, { task, expectedVersion: 1, expectedWriteId: 'w0' })).rejects.toBeInstanceOf(VersionConflictError);
    await reader.commit(tenant, { task: { ...task, writeId: 'w2' }, expectedVersion: 1, expectedWriteId: 'w1', requests: [{ ...big, output: 'short' }] });

    expect(await partsLeft(tenant, task.taskId)).toEqual([]);
    expect(await reader.getRequest(tenant, big.requestId)).toEqual({ ...big, output: 'short' });
    expect(await calls(() => reader.commit(tenant, { task, expectedVersion: 2, expectedWriteId: 'w2' }))).toEqual({ TransactWriteItems: 1 });
  });

  it('a create over an expired task needs no read first: the failed create returns what is there', async () => {
    const store = newStore();
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    await store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)] });
    const again = { ...task, expiresAt: undefined, sessionId: 'again' };

    expect(await calls(() => newStore().commit(tenant, { task: again, expectedVersion: 0 }))).toEqual({ TransactWriteItems: 2 });
    expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 1, sessionId: 'again' });
    expect(await store.listRequests(tenant, task.taskId)).toEqual([]);
  });

  it('with the archive index kept, a commit is still one transaction, and marking what this store listed or committed reads nothing', async () => {
    const [store, other] = [newStore({ archiveIndex: true }), newStore({ archiveIndex: true })];
    const tenant = uniqueName('tenant');
    const [task, elsewhere, mine] = [makeTask(tenant), makeTask(tenant), makeTask(tenant)];
    expect(await calls(() => store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)] }))).toEqual({ TransactWriteItems: 1 });
    expect(await calls(() => store.commit(tenant, { task, expectedVersion: 1 }))).toEqual({ TransactWriteItems: 1 });
    await other.commit(tenant, { task: elsewhere, expectedVersion: 0 });
    await store.commit(tenant, { task: mine, expectedVersion: 0 });

    // (Two stores' estimates of the clock may disagree by up to clockSkewMs: their entries' order is that close.)
    const listed = (await store.listUnarchived(Date.now() + 3_600_000, { limit: 1000 })).items.filter((e) => e.tenantId === tenant);
    expect(Object.fromEntries(listed.map((e) => [e.taskId, e.version]))).toEqual({ [task.taskId]: 2, [elsewhere.taskId]: 1, [mine.taskId]: 1 });
    // Listed by it: one delete each, all at once.
    expect(await calls(() => store.markArchived(listed.filter((e) => e.taskId !== elsewhere.taskId)))).toEqual({ DeleteItem: 2 });
    // Committed by it (the header it remembers names the entry): no read either.
    expect(await calls(() => other.markArchived([{ tenantId: tenant, taskId: elsewhere.taskId, version: 1 }]))).toEqual({ DeleteItem: 1 });
    // Neither (another store's task, to a store that saw nothing): the headers are read first, in one call.
    await other.commit(tenant, { task: elsewhere, expectedVersion: 1 });
    expect(await calls(() => newStore({ archiveIndex: true }).markArchived([{ tenantId: tenant, taskId: elsewhere.taskId, version: 2 }]))).toEqual({
      BatchGetItem: 1,
      DeleteItem: 1,
    });
    expect((await store.listUnarchived(Date.now() + 3_600_000, { limit: 1000 })).items.filter((e) => e.tenantId === tenant)).toEqual([]);
  });

  it('with the archive index kept, a commit writes one request fewer (48, or 47 with a lease), in one transaction', async () => {
    const store = newStore({ archiveIndex: true });
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant, { requestCount: 48 });
    const requests = Array.from({ length: 49 }, (_, seq) => makeRequest(task, seq));
    await expect(store.commit(tenant, { task, expectedVersion: 0, requests })).rejects.toThrow('at most 48 requests when the archive index is kept');
    expect(await calls(() => store.commit(tenant, { task, expectedVersion: 0, requests: requests.slice(0, 48) }))).toEqual({ TransactWriteItems: 1 });
    const leased = { ...task, lease: { requestId: requests[0].requestId, expiresAt: Date.now() + 60_000 } };
    const again = requests.slice(0, 48).map((r) => ({ ...r, output: 'again' }));
    await expect(store.commit(tenant, { task: leased, expectedVersion: 1, requests: again })).rejects.toThrow(
      'at most 47 requests when the task holds a lease and the archive index is kept',
    );
    expect(await calls(() => store.commit(tenant, { task: leased, expectedVersion: 1, requests: again.slice(0, 47) }))).toEqual({ TransactWriteItems: 1 });
    expect((await store.listOwnerSessions(tenant, task.ownerId, { limit: 10 })).items).toEqual([task.sessionId]);
  });
});

/** The part items left in a task's partition. */
async function partsLeft(tenantId: string, taskId: string): Promise<string[]> {
  const { Items } = await doc.send(
    new QueryCommand({
      TableName: table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':pk': taskPk(tenantId, taskId), ':p': 'RPART#' },
      ProjectionExpression: 'sk',
    }),
  );
  return (Items ?? []).map((i) => String(i.sk));
}
