/**
 * Issue 12, point 5: no answer is lost to a store limit the server knew about. On DynamoDB (an item
 * holds 400 KB, a transaction 4 MB) a message up to TA_MAX_BODY_BYTES is stored, and so is an
 * answer of any size the model returns after it ran; a request the store cannot take is refused
 * with 413 before the model is called. On PostgreSQL (issue 22, point 3) there is no such limit: a
 * 5 MiB request round-trips through the server as one row, never split.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { Client } from 'pg';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { postgresStores } from '../support/postgres-stores';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testPostgresUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { modelInput, v3Client } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Big
version: 1
description: An agent whose model the test scripts
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;
const KIB = 1024;

/** `bytes` of text with multi-byte characters and JSON escapes (a split at a byte boundary would show). */
const text = (bytes: number, seed: string) => `${seed} ✓ "q" \\ \n`.repeat(Math.ceil(bytes / 12)).slice(0, bytes);

describe('v3 large messages and answers on DynamoDB Local', () => {
  let llm: FakeOpenAi;
  let client: DynamoDBClient;
  let table: string;
  const apps: TestApp[] = [];
  const env = () => ({ TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' });
  const start = async (options: { maxRequestBytes?: number } = {}) => {
    const store = new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL, ...options });
    const app = await startTestApp({ agents: { 'big.yaml': AGENT }, env: env(), store });
    apps.push(app);
    return v3Client(`${app.url}/Big/1`);
  };

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    table = uniqueName('large');
    client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    await createTestStateTable(table);
  }, 60_000);
  afterAll(async () => {
    for (const app of apps) await app.close();
    client?.destroy();
    await llm?.close();
  });
  afterEach(() => llm.discard());

  it('a 450 KiB message is answered 200 and reads back whole with its task', async () => {
    const api = await start();
    const question = text(450 * KIB, 'question');
    llm.script(reply.text('short answer'));

    const res = await api.say(question);

    expect([res.status, res.body.status]).toEqual([200, 'Completed']);
    const task = await api.task(res.body.task_id);
    expect(task.status).toBe(200);
    expect(task.body.requests[0].messages[0].items[0].content).toBe(question);
    expect(task.body.requests[0].output).toBe('short answer');
  }, 60_000);

  it('a 250 KiB question with a 250 KiB answer keeps the answer, and a follow-on sees both', async () => {
    const api = await start();
    const question = text(250 * KIB, 'question');
    const answer = text(250 * KIB, 'answer');
    llm.script(reply.text(answer));

    const res = await api.say(question);

    expect([res.status, res.body.status]).toEqual([200, 'Completed']);
    const task = await api.task(res.body.task_id);
    expect(task.body.requests[0].output).toBe(answer);
    expect(task.body.requests[0].messages[0].items[0].content).toBe(question);

    llm.script(reply.text('ok'));
    const next = await api.say('and now?', { task_id: res.body.task_id });
    expect([next.status, next.body.status]).toEqual([200, 'Completed']);
    const seen = llm.requests.at(-1)!.body.messages.map((m: { content: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
    expect(seen).toContain(answer);
  }, 60_000);

  it('a message past what the store takes is refused with 413 before the model is called, and nothing is stored', async () => {
    const api = await start({ maxRequestBytes: 1024 * KIB });
    const calls = llm.requests.length;

    const res = await api.say(text(1100 * KIB, 'huge'), { session_id: 'refused' });

    expect([res.status, res.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    expect(llm.requests.length).toBe(calls);
    expect((await request(`${apps.at(-1)!.url}/Big/1/sessions/refused`)).status).toBe(404);
    // Under the ceiling on the same server, a large one goes through.
    llm.script(reply.text('fine'));
    expect((await api.say(text(600 * KIB, 'large'))).status).toBe(200);
  }, 60_000);
});

describe('v3 large messages on PostgreSQL', () => {
  let llm: FakeOpenAi;
  let app: TestApp | undefined;
  let raw: Client | undefined;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    await app?.close();
    await raw?.end();
    await llm?.close();
  });

  it('a 5 MiB message is answered 200, reads back whole, reaches the next turn, and is stored as one row (no splitting)', async () => {
    const { store, schema } = await postgresStores('large');
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
    app = await startTestApp({ agents: { 'big.yaml': AGENT }, env, store: store() });
    const api = v3Client(`${app.url}/Big/1`);
    const question = text(5 * 1024 * KIB, 'question');
    llm.script(reply.text('short answer'));

    const res = await api.say(question);

    expect([res.status, res.body.status]).toEqual([200, 'Completed']);
    const taskId = res.body.task_id;
    const task = await api.task(taskId);
    expect(task.status).toBe(200);
    expect(task.body.requests[0].messages[0].items[0].content).toBe(question);
    expect(task.body.requests[0].output).toBe('short answer');

    llm.script(reply.text('ok'));
    const next = await api.say('and now?', { task_id: taskId });
    expect([next.status, next.body.status]).toEqual([200, 'Completed']);
    expect(modelInput(llm.requests.at(-1)!.body).filter(([, c]) => c === question)).toHaveLength(1);

    raw = new Client({ connectionString: testPostgresUrl() });
    await raw.connect();
    const { rows } = await raw.query<{ seq: number; bytes: number }>(
      `SELECT seq, octet_length(data) AS bytes FROM ${schema}.requests WHERE tenant_id = $1 AND task_id = $2 ORDER BY seq`,
      [DEV_TENANT_ID, taskId],
    );
    expect(rows.map((r) => r.seq)).toEqual([0, 1]);
    expect(rows[0].bytes).toBeGreaterThan(5 * 1024 * KIB);
  }, 60_000);
});
