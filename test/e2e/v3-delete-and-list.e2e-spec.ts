/**
 * DELETE of a task and of a session, and the session listing, on every backend (issue 10, parts 3
 * and 4). Invariants: a deleted task leaves nothing in the store (counted on the raw backend); a
 * half-deleted task is never served and a re-run finishes it; the listing shows the caller's
 * sessions with this agent only, and pages are filled after filtering by agent.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { Client } from 'pg';
import Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { StateStoreUnavailableError } from '../../src/state/state.errors';
import { makeRequest } from '../conformance/fixtures';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { postgresStores } from '../support/postgres-stores';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testPostgresUrl, testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { v3Client } from '../support/v3-client';

const echoAgent = (name: string) => v3Agent(name, { model: 'local/echo' });
const SLOW_AGENT = v3Agent('Slow', { description: 'An agent whose model the test holds' });

interface Backend {
  name: string;
  /** A store over the backend, and how many stored keys/items mention any of `needles` (undefined: cannot tell). */
  setup(): Promise<{
    store: StateStore;
    /** Another store over the same data (another replica's; the in-memory one can only share itself). */
    another(): StateStore;
    mentions(needles: string[]): Promise<number | undefined>;
    close(): Promise<void>;
  }>;
}

const backends: Backend[] = [
  {
    name: 'memory',
    setup: async () => {
      const store = new MemoryStateStore();
      return { store, another: () => store, mentions: async () => undefined, close: async () => undefined };
    },
  },
  {
    name: 'redis',
    setup: async () => {
      const keyPrefix = `${uniqueName('v3-delete')}:`;
      const raw = new Redis(testRedisUrl());
      return {
        store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }),
        another: () => new RedisStateStore({ url: testRedisUrl(), keyPrefix }),
        // Key names carry task, request and session ids; the owner's session list holds session ids as members.
        mentions: async (needles) => {
          let n = 0;
          let cursor = '0';
          do {
            const [next, keys] = await raw.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
            for (const key of keys) {
              const decoded = decodeURIComponent(key);
              if (needles.some((x) => decoded.includes(x))) n++;
              if (/:sessions:[^:]*$/.test(key)) n += (await raw.zrange(key, '0', '-1')).filter((m) => needles.includes(m)).length;
            }
            cursor = next;
          } while (cursor !== '0');
          return n;
        },
        close: async () => raw.disconnect(),
      };
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('v3-delete');
      const client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
      await createTestStateTable(table);
      const doc = DynamoDBDocumentClient.from(client);
      return {
        store: new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL }),
        another: () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL }),
        mentions: async (needles) => {
          let n = 0;
          let start: Record<string, unknown> | undefined;
          do {
            const page = await doc.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
            for (const item of page.Items ?? []) {
              const text = decodeURIComponent(JSON.stringify(item));
              if (needles.some((x) => text.includes(x))) n++;
            }
            start = page.LastEvaluatedKey;
          } while (start);
          return n;
        },
        close: async () => client.destroy(),
      };
    },
  },
  {
    name: 'postgres',
    setup: async () => {
      const { store, schema } = await postgresStores('v3_delete');
      const raw = new Client({ connectionString: testPostgresUrl() });
      await raw.connect();
      return {
        store: store(),
        another: store,
        mentions: async (needles) => {
          let n = 0;
          for (const table of ['tasks', 'requests', 'stream_events']) {
            const { rows } = await raw.query<{ text: string }>(`SELECT row_to_json(t)::text AS text FROM ${schema}.${table} t`);
            n += rows.filter((r) => needles.some((x) => r.text.includes(x))).length;
          }
          return n;
        },
        close: () => raw.end(),
      };
    },
  },
];

/** The store with a fault switch: after `failAfter` more batch deletes, every further one fails (a crash mid-delete). */
function faulty(store: StateStore) {
  const fault = { failAfter: Infinity };
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'deleteTaskBatch') {
        return async (...args: Parameters<StateStore['deleteTaskBatch']>) => {
          if (fault.failAfter <= 0) throw new StateStoreUnavailableError('injected: the process died mid-delete');
          fault.failAfter--;
          return target.deleteTaskBatch(...args);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, fault };
}

describe.each(backends)('v3 DELETE and session listing on $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let backend: Awaited<ReturnType<Backend['setup']>>;
  let fault: { failAfter: number };
  let store: StateStore;
  const api = (agent: string, user?: string) => v3Client(`${t.url}/${agent}/1`, user ? { 'x-dev-user': user } : {});
  const del = (path: string, user?: string) => request(`${t.url}${path}`, { method: 'DELETE', headers: user ? { 'x-dev-user': user } : {} });
  const appEnv = () => ({ TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_TASK_LEASE_MS: '900' });
  const get = (path: string, user?: string) => request(`${t.url}${path}`, { headers: user ? { 'x-dev-user': user } : {} });

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    backend = await setup();
    ({ store, fault } = faulty(backend.store));
    const env = appEnv();
    const agents = { 'a.yaml': echoAgent('A'), 'b.yaml': echoAgent('B'), 'c.yaml': echoAgent('C'), 'slow.yaml': SLOW_AGENT };
    t = await startTestApp({ agents, env, store });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await backend?.close();
    await llm?.close();
  });
  afterEach(() => {
    fault.failAfter = Infinity;
  });

  /** A task of agent A with `n` requests: the first through the API, the rest written to the store directly. */
  async function longTask(n: number) {
    const sessionId = `s-${randomUUID()}`;
    const first = await api('A').say('the very first question of this long task', { session_id: sessionId });
    expect(first.status).toBe(200);
    const taskId: string = first.body.task_id;
    let task = (await backend.store.getTask(DEV_TENANT_ID, taskId))!;
    const requestIds = [first.body.request_id as string];
    for (let seq = 1; seq < n; seq += 40) {
      const batch = Array.from({ length: Math.min(40, n - seq) }, (_, i) => makeRequest(task, seq + i));
      requestIds.push(...batch.map((r) => r.requestId));
      task = await backend.store.commit(DEV_TENANT_ID, { task: { ...task, requestCount: seq + batch.length }, expectedVersion: task.version, requests: batch });
    }
    return { taskId, sessionId, requestIds, needles: [taskId, sessionId, ...requestIds] };
  }

  it('deletes a task of 500 requests: 204, then nothing of it is stored, and a second DELETE is 404', async () => {
    const { taskId, sessionId, requestIds, needles } = await longTask(500);
    expect((await api('A').task(taskId)).body.requests).toHaveLength(500);
    const before = await backend.mentions(needles);
    // At least one per request (its index entry) on Redis, two (record and index entry) on DynamoDB.
    if (before !== undefined) expect(before).toBeGreaterThanOrEqual(500);

    const res = await del(`/A/1/tasks/${taskId}`);

    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await api('A').task(taskId)).status).toBe(404);
    expect((await get(`/A/1/sessions/${sessionId}`)).status).toBe(404);
    expect(await backend.store.getTaskForDeletion(DEV_TENANT_ID, taskId)).toBeUndefined();
    expect(await backend.store.getRequest(DEV_TENANT_ID, requestIds[250])).toBeUndefined();
    if (before !== undefined) expect(await backend.mentions(needles)).toBe(0);
    const again = await del(`/A/1/tasks/${taskId}`);
    expect(again.status).toBe(404);
    expect(again.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(again.body.code).toBe('TASK_NOT_FOUND');
  }, 60_000);

  it("another user's task, another agent's task, and an unknown one are 404, and nothing is deleted", async () => {
    const mine = await api('A').say('keep me');
    const taskId = mine.body.task_id;

    for (const [path, user] of [
      [`/A/1/tasks/${taskId}`, 'mallory'],
      [`/B/1/tasks/${taskId}`, undefined],
      [`/A/1/tasks/no-such-task`, undefined],
    ] as const) {
      const res = await del(path, user);
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('TASK_NOT_FOUND');
    }
    expect((await del(`/A/1/sessions/${mine.body.session_id}`, 'mallory')).status).toBe(404);
    expect((await api('A').task(taskId)).body.requests).toHaveLength(1);
    expect((await del(`/A/1/tasks/bad id!`)).status).toBe(422);
  });

  it('a DELETE racing a running follow-on cancels it first; a follow-on after the delete starts a new task', async () => {
    llm.script(reply.text('ready'));
    const first = await api('Slow').say('start');
    const taskId = first.body.task_id;
    llm.script(reply.hang());
    const running = api('Slow').say('long', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);

    const res = await del(`/Slow/1/tasks/${taskId}`);

    expect(res.status).toBe(204);
    expect((await running).body.status).toBe('Canceled');
    expect((await api('Slow').task(taskId)).status).toBe(404);
    expect(await backend.mentions([taskId])).toBeFalsy();

    // The id is free again: naming it creates a fresh task of the caller's (upstream's rule), with nothing of the old one.
    llm.script(reply.text('fresh'));
    const after = await api('Slow').say('again', { task_id: taskId });
    expect(after.status).toBe(200);
    expect((await api('Slow').task(taskId)).body.requests.map((r: { output: string }) => r.output)).toEqual(['fresh']);
  });

  it('a DELETE on another replica cancels the running request through the task first; nothing of the task comes back', async () => {
    const other = await startTestApp({ agents: { 'slow.yaml': SLOW_AGENT }, env: appEnv(), store: backend.another() });
    try {
      llm.script(reply.text('ready'));
      const first = await api('Slow').say('start');
      const taskId = first.body.task_id;
      llm.script(reply.hang());
      const running = api('Slow').say('long', { task_id: taskId });
      const call = await llm.waitForRequest(llm.requests.length);

      const res = await request(`${other.url}/Slow/1/tasks/${taskId}`, { method: 'DELETE' });

      expect(res.status).toBe(204);
      await call.disconnected; // canceled through the task: the running replica aborted at its next lease renewal
      expect((await running).body.status).toBe('Canceled');
      expect((await api('Slow').task(taskId)).status).toBe(404);
      expect(await backend.store.getTaskForDeletion(DEV_TENANT_ID, taskId)).toBeUndefined();
      expect(await backend.mentions([taskId, first.body.request_id])).toBeFalsy();
    } finally {
      await other.close();
    }
  });

  it('a DELETE and follow-ons sent at once: afterwards the task is gone, or holds only what came after the delete', async () => {
    const first = await api('A').say('race');
    const taskId = first.body.task_id;
    const [deleted, ...follows] = await Promise.all([
      del(`/A/1/tasks/${taskId}`),
      ...Array.from({ length: 4 }, (_, i) => api('A').say(`follow ${i}`, { task_id: taskId })),
    ]);
    expect(deleted.status).toBe(204);
    for (const f of follows)
      expect({ status: f.status, body: [200, 404, 409].includes(f.status) ? 'ok' : f.body }).toEqual({ status: expect.any(Number), body: 'ok' });
    expect(await backend.store.getRequest(DEV_TENANT_ID, first.body.request_id)).toBeUndefined();
    const task = await api('A').task(taskId);
    if (task.status === 200) {
      // Only follow-ons that created the task anew after the delete: never the first request.
      expect(task.body.requests.map((r: { request_id: string }) => r.request_id)).not.toContain(first.body.request_id);
      expect(task.body.requests[0].seq).toBe(0);
    } else {
      expect(task.status).toBe(404);
    }
  });

  it('a crash mid-delete: the half-deleted task reads as not found, and a re-run of DELETE finishes it', async () => {
    const { taskId, sessionId, needles } = await longTask(120);
    fault.failAfter = 2; // two batches of 25, then the "process" dies

    const crashed = await del(`/A/1/tasks/${taskId}`);

    expect(crashed.status).toBe(503);
    expect((await api('A').task(taskId)).status).toBe(404);
    expect((await get(`/A/1/sessions/${sessionId}`)).status).toBe(404);
    const half = await backend.mentions(needles);
    if (half !== undefined) expect(half).toBeGreaterThan(0);
    expect(await backend.store.getTaskForDeletion(DEV_TENANT_ID, taskId)).toMatchObject({ deletingAt: expect.any(String) });

    fault.failAfter = Infinity;
    expect((await del(`/A/1/tasks/${taskId}`, 'mallory')).status).toBe(404); // still the owner's alone
    expect((await del(`/A/1/tasks/${taskId}`)).status).toBe(204);
    expect(await backend.store.getTaskForDeletion(DEV_TENANT_ID, taskId)).toBeUndefined();
    if (half !== undefined) expect(await backend.mentions(needles)).toBe(0);
    expect((await del(`/A/1/tasks/${taskId}`)).status).toBe(404);
  }, 60_000);

  it('a crash mid-delete, then a follow-on naming the task: it finishes the deletion and starts a fresh task', async () => {
    const { taskId, requestIds, needles } = await longTask(60);
    fault.failAfter = 1;
    expect((await del(`/A/1/tasks/${taskId}`)).status).toBe(503);
    fault.failAfter = Infinity;

    const follow = await api('A').say('start over', { task_id: taskId });

    expect(follow.status).toBe(200);
    const task = await api('A').task(taskId);
    expect(task.body.requests.map((r: { request_id: string; seq: number }) => [r.request_id, r.seq])).toEqual([[follow.body.request_id, 0]]);
    const oldIds = requestIds.filter((id) => id !== follow.body.request_id);
    for (const id of [oldIds[0], oldIds[59]]) expect(await backend.store.getRequest(DEV_TENANT_ID, id)).toBeUndefined();
    const left = await backend.mentions(needles.filter((x) => x !== taskId));
    if (left !== undefined) expect(left).toBe(0); // nothing of the old requests or of the old session (the new task has a new one)
  });

  it("DELETE /sessions/{id} removes the caller's tasks of this agent there, and finishes a half-deleted one", async () => {
    const user = `u-${randomUUID()}`;
    const sessionId = `shared-${randomUUID()}`;
    const a1 = await api('A', user).say('a one', { session_id: sessionId });
    const a2 = await api('A', user).say('a two', { session_id: sessionId });
    const b1 = await api('B', user).say('b one', { session_id: sessionId });
    // a2 is left half-deleted by a crash.
    fault.failAfter = 0;
    expect((await del(`/A/1/tasks/${a2.body.task_id}`, user)).status).toBe(503);
    fault.failAfter = Infinity;

    expect((await del(`/A/1/sessions/${sessionId}`, user)).status).toBe(204);

    for (const id of [a1.body.task_id, a2.body.task_id]) {
      expect((await api('A', user).task(id)).status).toBe(404);
      expect(await backend.store.getTaskForDeletion(DEV_TENANT_ID, id)).toBeUndefined();
    }
    expect(await backend.mentions([a1.body.task_id, a2.body.task_id, a1.body.request_id, a2.body.request_id])).toBeFalsy();
    expect((await api('B', user).task(b1.body.task_id)).status).toBe(200);
    expect((await get(`/B/1/sessions/${sessionId}`, user)).body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual([b1.body.task_id]);
    expect((await get(`/A/1/sessions/${sessionId}`, user)).status).toBe(404);
    expect((await del(`/A/1/sessions/${sessionId}`, user)).status).toBe(404);
  });

  it('lists sessions newest activity first, with task count and title, paged, 3 agents sharing a session id', async () => {
    const user = `u-${randomUUID()}`;
    const s = (n: string) => `${n}-${user}`;
    const say = (agent: string, session: string, text: string, extra: Record<string, unknown> = {}) =>
      api(agent, user).say(text, { session_id: s(session), ...extra });
    const a1 = await say('A', 'shared', 'How do I   reset my password on the staging cluster before Friday please?');
    await say('B', 'shared', 'b in shared');
    await say('C', 'shared', 'c in shared');
    await say('A', 'only-a', 'only a');
    await say('B', 'only-b', 'only b');
    await say('A', 'a-and-c', 'first of a-and-c');
    await say('C', 'a-and-c', 'c in a-and-c');
    await say('A', 'shared', 'second task of A in shared');
    // Newest activity last: a follow-on on the first task of `shared`.
    await api('A', user).say('follow-on', { task_id: a1.body.task_id });

    const pages: { session_id: string; task_count: number; title: string | null }[][] = [];
    let cursor: string | null = null;
    do {
      const res = await get(`/A/1/sessions?limit=1${cursor ? `&cursor=${cursor}` : ''}`, user);
      expect(res.status).toBe(200);
      pages.push(res.body.sessions);
      cursor = res.body.next_cursor;
    } while (cursor && pages.length < 10);

    expect(pages.map((p) => p.map((x) => x.session_id))).toEqual([[s('shared')], [s('a-and-c')], [s('only-a')]]);
    expect(pages[0][0]).toEqual({
      session_id: s('shared'),
      task_count: 2,
      created_at: expect.any(String),
      last_activity_at: expect.any(String),
      title: 'How do I reset my password on the staging cluster before…',
    });
    expect(pages[1][0]).toMatchObject({ task_count: 1, title: 'first of a-and-c' });
    const all = await get(`/A/1/sessions`, user);
    expect(all.body.next_cursor).toBeNull();
    expect(all.body.sessions.map((x: { last_activity_at: string }) => x.last_activity_at)).toEqual(
      [...all.body.sessions.map((x: { last_activity_at: string }) => x.last_activity_at)].sort().reverse(),
    );
    expect((await get(`/B/1/sessions`, user)).body.sessions.map((x: { session_id: string }) => x.session_id).sort()).toEqual([s('only-b'), s('shared')].sort());
    expect((await get(`/A/1/sessions`, 'someone-else')).body).toEqual({ sessions: [], next_cursor: null });
    expect((await get(`/A/1/sessions?limit=0`, user)).status).toBe(422);
    expect((await get(`/A/1/sessions?cursor=garbage`, user)).status).toBe(422);
  });

  it('GET /sessions/{id} fills its pages after filtering by agent', async () => {
    const user = `u-${randomUUID()}`;
    const session = `mixed-${randomUUID()}`;
    const ids: Record<string, string[]> = { A: [], B: [] };
    for (const agent of ['B', 'B', 'A', 'B', 'B', 'A', 'B', 'A']) {
      ids[agent].push((await api(agent, user).say(`${agent} task`, { session_id: session })).body.task_id);
    }
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const res = await get(`/A/1/sessions/${session}?limit=2${cursor ? `&cursor=${cursor}` : ''}`, user);
      expect(res.status).toBe(200);
      pages.push(res.body.tasks.map((x: { task_id: string }) => x.task_id));
      cursor = res.body.next_cursor;
    } while (cursor && pages.length < 10);
    expect(pages).toEqual([ids.A.slice(0, 2), ids.A.slice(2)]);
    expect((await get(`/C/1/sessions/${session}`, user)).status).toBe(404);
  });
});
