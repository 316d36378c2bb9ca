/**
 * A forged paging cursor is 422 INVALID_CURSOR on every backend, before any store sees it (a forged
 * position used to reach DynamoDB as an invalid ExclusiveStartKey: a 500).
 */
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { request } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { postgresStore } from '../support/postgres-stores';
import { startTestApp, TestApp } from '../support/test-app';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Pager
version: 1
description: Agent whose lists are paged
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;

const backends: { name: string; store: () => Promise<StateStore> }[] = [
  { name: 'memory', store: async () => new MemoryStateStore() },
  { name: 'redis', store: async () => new RedisStateStore({ url: testRedisUrl(), keyPrefix: `${uniqueName('cursor')}:` }) },
  {
    name: 'dynamodb',
    store: async () => {
      const table = uniqueName('cursor');
      await createTestStateTable(table);
      return new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    },
  },
  { name: 'postgres', store: () => postgresStore('cursor') },
];

const forged = [
  { label: '!!!', cursor: '!!!' },
  { label: 'padded', cursor: 'MQ==' },
  { label: 'non-canonical', cursor: 'AB' },
  { label: 'binary position', cursor: Buffer.from('\u0000\u0001').toString('base64url') },
  { label: 'too long', cursor: 'A'.repeat(600) },
];

describe.each(backends)('forged cursors on $name', ({ store }) => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({ agents: { 'pager.yaml': AGENT }, env: { TA_BASE_URL: 'http://127.0.0.1:9', TA_API_KEY: 'sk-test' }, store: await store() });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  it.each(forged)('GET /sessions/{id} with a $label cursor is 422 INVALID_CURSOR', async ({ cursor }) => {
    const res = await request(`${app.url}/Pager/1/sessions/s-1?cursor=${encodeURIComponent(cursor)}`);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'INVALID_CURSOR' });
  });

  it.each(forged)('GET /sessions with a $label cursor is 422 INVALID_CURSOR', async ({ cursor }) => {
    const res = await request(`${app.url}/Pager/1/sessions?cursor=${encodeURIComponent(cursor)}`);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'INVALID_CURSOR' });
  });
});
