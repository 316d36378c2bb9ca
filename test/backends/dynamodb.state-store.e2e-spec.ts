import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { stateTableDefinition } from '../../src/state/backends/dynamodb/dynamodb-table';
import { HEADER_SK, IDEMPOTENCY_SK, idempotencyPk, requestIndexPk, requestSk, taskPk, tenantPkPrefix } from '../../src/state/backends/dynamodb/dynamodb-keys';
import { IdempotencyKeyTakenError, StateCorruptError } from '../../src/state/state.errors';
import { describeStateStoreConformance } from '../conformance/state-store.conformance';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, uniqueName } from '../support/services';

// This file's own table on the run's DynamoDB Local.
const table = uniqueName('ta-test');
let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;
const newStore = () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });

beforeAll(async () => {
  client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
  doc = DynamoDBDocumentClient.from(client);
  await createTestStateTable(table);
}, 60_000);
afterAll(() => client.destroy());

describeStateStoreConformance('dynamodb', {
  createStore: async () => newStore(),
  createArchiveStore: async () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL, archiveIndex: true }),
  rawRequest: async (tenantId, taskId, seq) => {
    const { Item } = await doc.send(new GetCommand({ TableName: table, Key: { pk: taskPk(tenantId, taskId), sk: requestSk(seq) } }));
    return Item?.data as string | undefined;
  },
  countStored: async (tenantId) => {
    let n = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(
        new ScanCommand({
          TableName: table,
          FilterExpression: 'begins_with(pk, :p)',
          ExpressionAttributeValues: { ':p': tenantPkPrefix(tenantId) },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      n += page.Items?.length ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
    return n;
  },
});

describe('DynamoDbStateStore', () => {
  let store: DynamoDbStateStore;
  beforeAll(() => {
    store = newStore();
  });
  afterAll(() => store.close());

  it('createStateTable is idempotent and enables TTL on `ttl`', async () => {
    expect(await createTestStateTable(table)).toBe(false);
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
    expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
  });

  it('createStateTable on a table made without TTL (by hand, by a deploy job) enables it, and reports it found', async () => {
    const bare = uniqueName('bare-table');
    await client.send(new CreateTableCommand(stateTableDefinition(bare) as unknown as ConstructorParameters<typeof CreateTableCommand>[0]));
    expect((await client.send(new DescribeTimeToLiveCommand({ TableName: bare }))).TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
    expect(await createTestStateTable(bare)).toBe(false);
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: bare }));
    expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
  });

  it('createStateTable creates a missing table: ACTIVE, with TTL, reported created', async () => {
    const fresh = uniqueName('fresh-table');
    expect(await createTestStateTable(fresh)).toBe(true);
    expect((await client.send(new DescribeTableCommand({ TableName: fresh }))).Table?.TableStatus).toBe('ACTIVE');
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: fresh }));
    expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
  });

  it('reports an unparseable record as StateCorruptError and leaves it untouched', async () => {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    const request = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    const headerKey = { pk: taskPk(tenant, task.taskId), sk: HEADER_SK };
    const { Item: header } = await doc.send(new GetCommand({ TableName: table, Key: headerKey }));
    await doc.send(new PutCommand({ TableName: table, Item: { ...header, data: '{"taskId": garbage' } }));
    const requestKey = { pk: taskPk(tenant, task.taskId), sk: requestSk(0) };

    const err = await store.getTask(tenant, task.taskId).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(StateCorruptError);
    expect(err).toMatchObject({ code: 'STATE_CORRUPT', key: `${headerKey.pk} / ${headerKey.sk}` });
    await expect(store.listRequests(tenant, task.taskId)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 5 })).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.commit(tenant, { task, expectedVersion: 1 })).rejects.toBeInstanceOf(StateCorruptError);
    expect((await doc.send(new GetCommand({ TableName: table, Key: headerKey }))).Item).toEqual({ ...header, data: '{"taskId": garbage' });

    // A request record that is not JSON (the header restored), and one whose `data` is not even a string.
    await doc.send(new PutCommand({ TableName: table, Item: header }));
    const { Item: stored } = await doc.send(new GetCommand({ TableName: table, Key: requestKey }));
    await doc.send(new PutCommand({ TableName: table, Item: { ...stored, data: 'not json' } }));
    await expect(store.getRequest(tenant, request.requestId)).rejects.toBeInstanceOf(StateCorruptError);
    await doc.send(new PutCommand({ TableName: table, Item: { ...stored, data: 42 } }));
    await expect(store.listRequests(tenant, task.taskId)).rejects.toBeInstanceOf(StateCorruptError);
    expect((await doc.send(new GetCommand({ TableName: table, Key: requestKey }))).Item?.data).toBe(42);
  });

  it("keeps every item's ttl at or after the task's expiry, touching old items only when the horizon moves", async () => {
    const tenant = uniqueName('tenant');
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    const sec = (iso: string) => Math.ceil(Date.parse(iso) / 1000);
    const task = makeTask(tenant, { expiresAt: at(60_000) });
    const r0 = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [r0] });
    const query = async (pk: string) =>
      (await doc.send(new QueryCommand({ TableName: table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }))).Items!;
    const getItem = async (pk: string, sk: string) => (await doc.send(new GetCommand({ TableName: table, Key: { pk, sk } }))).Item!;
    /** The header's ttl, and every other item's: requests, request index entries, session entry. */
    const ttls = async () => {
      const items = await query(taskPk(tenant, task.taskId));
      const header = items.find((i) => i.sk === HEADER_SK)!;
      const requests = items.filter((i) => i.sk !== HEADER_SK);
      const index = await Promise.all(requests.map((i) => getItem(requestIndexPk(tenant, i.requestId), 'REQUEST')));
      const session = await query(header.sessionPk);
      return { header: header.ttl, others: [...requests, ...index, ...session].map((i) => i.ttl) };
    };

    const first = await ttls();
    expect(first.header).toBe(sec(task.expiresAt!));
    for (const t of first.others) expect(t).toBeGreaterThanOrEqual(sec(task.expiresAt!));

    // Within the horizon: new items get the same ttl, old ones are not rewritten.
    await store.commit(tenant, { task: { ...task, expiresAt: at(70_000) }, expectedVersion: 1, requests: [makeRequest(task, 1)] });
    expect((await ttls()).others).toEqual([first.others[0], first.others[0], first.others[0], first.others[0], first.others[0]]);

    // Past the horizon: every item is extended first.
    const later = at(600_000);
    await store.commit(tenant, { task: { ...task, expiresAt: later }, expectedVersion: 2 });
    const moved = await ttls();
    expect(moved.others).toHaveLength(5);
    for (const t of moved.others) expect(t).toBeGreaterThanOrEqual(sec(later));

    // No expiry any more: no item keeps a ttl.
    await store.commit(tenant, { task: { ...task, expiresAt: undefined }, expectedVersion: 3 });
    expect(await ttls()).toEqual({ header: undefined, others: [undefined, undefined, undefined, undefined, undefined] });
  });

  it("stores a record larger than an item as parts of the task's incarnation and ttl; a smaller rewrite leaves none behind", async () => {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant, { expiresAt: new Date(Date.now() + 60_000).toISOString() });
    const request = makeRequest(task, 0, { output: 'é'.repeat(600_000) });
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    /** Every item of the task's partition (a page holds 1 MB: parts take several). */
    const items = async () => {
      const all: Record<string, unknown>[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': taskPk(tenant, task.taskId) },
            ExclusiveStartKey: start,
          }),
        );
        all.push(...page.Items!);
        start = page.LastEvaluatedKey;
      } while (start);
      return all;
    };

    const [header, item, ...parts] = await items();
    expect(item).toMatchObject({ sk: requestSk(0), parts: 4, inc: header.inc, ttl: header.childTtl });
    expect(item.data).toBeUndefined();
    expect(parts.map((p) => [p.sk, p.inc, p.ttl])).toEqual([0, 1, 2, 3].map((i) => [`RPART#000000#${item.gen}#0000${i}`, header.inc, header.childTtl]));
    for (const p of parts) expect((p.part as Uint8Array).length).toBeLessThanOrEqual(350_000);

    await store.commit(tenant, { task, expectedVersion: 1, requests: [{ ...request, output: 'short' }] });
    expect((await items()).map((i) => i.sk)).toEqual([HEADER_SK, requestSk(0)]);
    expect(await store.getRequest(tenant, request.requestId)).toEqual({ ...request, output: 'short' });
  });

  it('never reads a split record with a part missing, and deletion removes parts no request names', async () => {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    const request = makeRequest(task, 0, { output: 'x'.repeat(800_000) });
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    const pk = taskPk(tenant, task.taskId);
    const { Item: item } = await doc.send(new GetCommand({ TableName: table, Key: { pk, sk: requestSk(0) } }));
    // A part lost (no writer does this: it stands for damage), and a part a crashed writer left.
    await doc.send(new DeleteCommand({ TableName: table, Key: { pk, sk: `RPART#000000#${item!.gen}#00001` } }));
    await doc.send(new PutCommand({ TableName: table, Item: { pk, sk: 'RPART#000000#0123456789abcdef#00000', part: Buffer.from('{"x":'), inc: item!.inc } }));

    await expect(store.getRequest(tenant, request.requestId)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.listRequests(tenant, task.taskId)).rejects.toBeInstanceOf(StateCorruptError);

    await store.commit(tenant, { task: { ...task, deletingAt: new Date().toISOString() }, expectedVersion: 1 });
    let done = false;
    for (let i = 0; i < 10 && !done; i++) done = await store.deleteTaskBatch(tenant, task.taskId, 10);
    expect(done).toBe(true);
    const left = await doc.send(new QueryCommand({ TableName: table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }));
    expect(left.Items).toEqual([]);
  });

  it("stores an Idempotency-Key's entry in its own item, expiring by the table's TTL at its expiresAt; a corrupt one is StateCorruptError", async () => {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    const now = store.now();
    const entry = { key: 'k/1#x', fingerprint: 'f1', operation: 'turn', taskId: task.taskId, createdAt: now, expiresAt: now + 60_500 };
    await store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)], idempotency: entry });
    const key = { pk: idempotencyPk(tenant, entry.key), sk: IDEMPOTENCY_SK };
    const { Item: item } = await doc.send(new GetCommand({ TableName: table, Key: key }));
    expect(item).toEqual({ ...key, data: JSON.stringify(entry), expiresAt: entry.expiresAt, ttl: Math.ceil(entry.expiresAt / 1000) });
    expect(key.pk.startsWith(tenantPkPrefix(tenant))).toBe(true);

    // Damaged: the read, and a claim of the key (the claim's condition still sees it held), report it and change nothing.
    await doc.send(new PutCommand({ TableName: table, Item: { ...item, data: 'not json' } }));
    await expect(store.getIdempotencyEntry(tenant, entry.key)).rejects.toMatchObject({ code: 'STATE_CORRUPT', key: `${key.pk} / ${key.sk}` });
    const other = makeTask(tenant);
    await expect(store.commit(tenant, { task: other, expectedVersion: 0, idempotency: { ...entry, taskId: other.taskId } })).rejects.toBeInstanceOf(
      StateCorruptError,
    );
    expect(await store.getTask(tenant, other.taskId)).toBeUndefined();
    expect((await doc.send(new GetCommand({ TableName: table, Key: key }))).Item?.data).toBe('not json');
  });

  it('a commit that claims an Idempotency-Key writes one request fewer (48), in the transaction it claims in', async () => {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant, { requestCount: 49 });
    const requests = Array.from({ length: 49 }, (_, seq) => makeRequest(task, seq));
    const now = store.now();
    const entry = { key: `k-${task.taskId}`, fingerprint: 'f1', operation: 'fork', taskId: task.taskId, createdAt: now, expiresAt: now + 60_000 };
    await expect(store.commit(tenant, { task, expectedVersion: 0, requests, idempotency: entry })).rejects.toThrow(
      'at most 48 requests when it claims an Idempotency-Key',
    );
    expect(await store.getIdempotencyEntry(tenant, entry.key)).toBeUndefined();
    await store.commit(tenant, { task: { ...task, requestCount: 48 }, expectedVersion: 0, requests: requests.slice(0, 48), idempotency: entry });
    expect(await store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
    expect(await store.listRequests(tenant, task.taskId)).toHaveLength(48);
    expect((await store.listOwnerSessions(tenant, task.ownerId, { limit: 10 })).items).toEqual([task.sessionId]);
    // Refused, the same large commit of another task writes nothing of it.
    const twin = makeTask(tenant, { sessionId: 'twin', requestCount: 48 });
    const twins = Array.from({ length: 48 }, (_, seq) => makeRequest(twin, seq, { output: 'x'.repeat(seq === 0 ? 500_000 : 10) }));
    const refused = await store
      .commit(tenant, { task: twin, expectedVersion: 0, requests: twins, idempotency: { ...entry, taskId: twin.taskId } })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(IdempotencyKeyTakenError);
    expect((refused as IdempotencyKeyTakenError).entry).toEqual(entry);
    const left = await doc.send(
      new QueryCommand({ TableName: table, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': taskPk(tenant, twin.taskId) } }),
    );
    expect(left.Items).toEqual([]);
  });
});
