/**
 * Failures of the parts around a stateful request: the store going away, a record that cannot be
 * read, and the process that runs a request dying. None may hang a request, half-write a task, or
 * block the task forever.
 */
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { RedisKeys } from '../../src/state/backends/redis/redis-keys';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { freePort, RedisServerHandle, startRedisServer, testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Faulty
version: 1
description: Agent for fault tests
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;
const ROOT = join(__dirname, '..', '..');

describe('v3 when the state store fails', () => {
  let llm: FakeOpenAi;
  let redis: RedisServerHandle;
  let t: TestApp;
  let api: ReturnType<typeof v3Client>;
  const prefix = `${uniqueName('faults')}:`;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    redis = await startRedisServer();
    t = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
      store: new RedisStateStore({ url: redis.url, keyPrefix: prefix }),
    });
    api = v3Client(`${t.url}/Faulty/1`);
  }, 30_000);
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
    await llm?.close();
  });

  it('answers 503 within a bounded time while Redis is down, writes nothing, and recovers when it is back', async () => {
    llm.script(reply.text('before'));
    const first = await api.say('before');
    expect(first.status).toBe(200);
    const taskId = first.body.task_id;

    await redis.stop();
    const started = Date.now();
    const followOn = await api.say('during', { task_id: taskId });
    const fresh = await api.say('new task during');
    const read = await api.task(taskId);
    const ready = await request(`${t.url}/Faulty/1/health/ready`);
    expect(Date.now() - started).toBeLessThan(12_000);
    for (const res of [followOn, fresh, read]) {
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('STATE_STORE_UNAVAILABLE');
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect(ready.status).toBe(503);
    expect(ready.body.checks.state_store.status).toBe('down');
    expect(llm.requests).toHaveLength(1); // the model was never called without a stored request

    await redis.start(); // empty again (no persistence): the store is back, the data is not
    const deadline = Date.now() + 10_000;
    let after = await request(`${t.url}/Faulty/1/health/ready`);
    while (after.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      after = await request(`${t.url}/Faulty/1/health/ready`);
    }
    expect(after.status).toBe(200);
    llm.script(reply.text('after'));
    expect((await api.say('after')).status).toBe(200);
  }, 30_000); // its own bound on the outage answers is 12 s; a restart of Redis follows
});

describe('v3 with a stored record that cannot be parsed', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let raw: Redis;
  const prefix = `${uniqueName('corrupt')}:`;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    raw = new Redis(testRedisUrl());
    t = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
      store: new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix }),
    });
  });
  afterAll(async () => {
    await t?.close();
    raw?.disconnect();
    await llm?.close();
  });

  it('answers 500 with an error_id that is logged, and leaves the record untouched for inspection', async () => {
    const api = v3Client(`${t.url}/Faulty/1`);
    llm.script(reply.text('fine'));
    const first = await api.say('hello');
    const keys = new RedisKeys(prefix, DEV_TENANT_ID);
    await raw.hset(keys.requests(first.body.task_id), '0', '{"requestId": not json');

    const read = await api.task(first.body.task_id);
    expect(read.status).toBe(500);
    expect(read.body.code).toBe('STATE_CORRUPT');
    expect(read.body.error_id).toEqual(expect.any(String));
    expect(t.logs().some((l) => l.error_id === read.body.error_id)).toBe(true);

    // A replica commits a turn from what it wrote itself (src/tasks/writer/task-cache.ts); another replica
    // reads the task first and meets the corrupt record: it refuses before calling the model.
    const replica = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
      store: new RedisStateStore({ url: testRedisUrl(), keyPrefix: prefix }),
    });
    const followOn = await v3Client(`${replica.url}/Faulty/1`)
      .say('again', { task_id: first.body.task_id })
      .finally(() => replica.close());
    expect(followOn.status).toBe(500);
    expect(followOn.body.code).toBe('STATE_CORRUPT');
    expect(llm.requests).toHaveLength(1);
    expect(await raw.hget(keys.requests(first.body.task_id), '0')).toBe('{"requestId": not json');
    expect(await raw.hlen(keys.requests(first.body.task_id))).toBe(1);
  });
});

describe('v3 when the process running a request dies', () => {
  let llm: FakeOpenAi;
  let child: ChildProcess | undefined;
  let t: TestApp | undefined;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await t?.close();
    await llm?.close();
  });

  it('a later follow-on is refused while the dead request’s lease holds, then closes it as abandoned and runs', async () => {
    const cli = join(ROOT, 'dist', 'cli.js');
    expect(existsSync(cli)).toBe(true); // built by scripts/test.sh (npx tsc -p tsconfig.build.json)
    const dir = writeAgentDir({ 'faulty.yaml': AGENT });
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? '',
      TA_AUTH_MODE: 'dev',
      TA_HOST: '127.0.0.1',
      TA_LOG_LEVEL: 'warn',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: testRedisUrl(),
      TA_TASK_LEASE_MS: '1500',
    };
    child = spawn(process.execPath, [cli, 'serve', dir, '--port', String(port)], { env, stdio: 'ignore' });
    const base = `http://127.0.0.1:${port}/Faulty/1`;
    for (let i = 0; i < 200; i++) {
      if ((await request(`${base}/health/live`).catch(() => undefined))?.status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const first = v3Client(base);
    llm.script(reply.text('first answer'), reply.hang());
    const created = await first.say('first');
    expect(created.status).toBe(200);
    const taskId = created.body.task_id;
    const doomed = first.say('this request dies with its process', { task_id: taskId }).catch((e: unknown) => e);
    await llm.waitForRequest(1);
    child.kill('SIGKILL');
    await doomed;

    // A new process on the same store (same default key prefix as the CLI's).
    t = await startTestApp({
      agents: { 'faulty.yaml': AGENT },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_STATE_STORE: 'redis', TA_REDIS_URL: testRedisUrl() },
    });
    const api = v3Client(`${t.url}/Faulty/1`);
    const blocked = await api.say('too early', { task_id: taskId });
    expect(blocked.status).toBe(409);

    llm.script(reply.text('recovered'));
    let later = blocked;
    const deadline = Date.now() + 10_000;
    while (later.status === 409 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      later = await api.say('after the lease lapsed', { task_id: taskId });
    }
    expect(later.status).toBe(200);
    expect(later.body.content.output).toBe('recovered');
    const task = await api.task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Failed', 'Completed']);
    expect(task.body.requests[1].error.code).toBe('ABANDONED');
    expect(task.body.requests[2].seq).toBe(2);
    // A process to start, a lease (plus the store clock's skew allowance) to lapse: more than Jest's 5 s on a busy machine.
  }, 20_000);
});
