/**
 * Leases are judged by the store's clock, not by each replica's own (docs/api.md, "Leases and
 * clocks"). Replica B is a real server process whose clock runs 30 s ahead (libfaketime, more than
 * the lease length); replica A is in-process with the true clock; both share one real Redis or
 * DynamoDB Local. Judged by local clocks, B would take over A's live request (it sees the lease
 * long expired), and A would wait 30 s for a dead B's lease to lapse; judged by the store's clock,
 * neither happens.
 */
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, dynamoDbServerEnv, freePort, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Client } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';
import { LIBFAKETIME } from '../support/faketime';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Clock
version: 1
description: Agent served by replicas whose clocks disagree
spec:
  agent:
    name: default
    model: gpt-test
`;
const ROOT = join(__dirname, '..', '..');
const LEASE_MS = 1500;
/** B's clock runs this far ahead: far more than a lease. */
const SKEW = '+30s';

interface Backend {
  name: string;
  /** The store for the in-process replica A, and the environment naming the same store for B. */
  setup(): Promise<{ store: StateStore; env: Record<string, string> }>;
}

const backends: Backend[] = [
  {
    name: 'redis',
    setup: async () => {
      // B (the CLI) uses the default key prefix, so A does too (task ids are random: no clash).
      return { store: new RedisStateStore({ url: testRedisUrl() }), env: { TA_STATE_STORE: 'redis', TA_REDIS_URL: testRedisUrl() } };
    },
  },
  {
    name: 'dynamodb',
    setup: async () => {
      const table = uniqueName('lease-clock');
      await createTestStateTable(table);
      return {
        store: new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL }),
        env: dynamoDbServerEnv(table, testDynamoDbEndpoint()),
      };
    },
  },
  {
    name: 'postgres',
    setup: async () => {
      const { store, env } = await postgresStores('lease_clock');
      return { store: store(), env };
    },
  },
];

describe.each(backends)('replicas whose clocks disagree, on $name', ({ setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: ChildProcess | undefined;
  let apiA: ReturnType<typeof v3Client>;
  let apiB: ReturnType<typeof v3Client>;
  let baseB: string;
  /** A's store, read by the test. */
  let view: StateStore;

  beforeAll(async () => {
    const cli = join(ROOT, 'dist', 'cli.js');
    expect(existsSync(cli)).toBe(true); // built by scripts/test.sh
    expect(LIBFAKETIME).toBeDefined(); // apt-get install faketime (.ci/run does)
    llm = await startFakeOpenAi();
    const { store, env } = await setup();
    view = store;
    const common = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_TASK_LEASE_MS: String(LEASE_MS) };
    const dir = writeAgentDir({ 'clock.yaml': AGENT });
    a = await startTestApp({ configPath: dir, env: common, store });
    const port = await freePort();
    // libfaketime preloaded into node itself (not the `faketime` wrapper, which would survive as the
    // parent of an orphan when killed): B's Date.now() and every other wall-clock read run ahead.
    b = spawn(process.execPath, [cli, 'serve', dir, '--port', String(port)], {
      env: {
        PATH: process.env.PATH ?? '',
        LD_PRELOAD: LIBFAKETIME!,
        FAKETIME: SKEW,
        TA_HOST: '127.0.0.1',
        TA_AUTH_MODE: 'dev',
        TA_LOG_LEVEL: 'warn',
        ...common,
        ...env,
      },
      stdio: 'ignore',
    });
    baseB = `http://127.0.0.1:${port}/Clock/1`;
    for (let i = 0; i < 200; i++) {
      if ((await request(`${baseB}/health/live`).catch(() => undefined))?.status === 200) break;
      await sleep(50);
    }
    apiA = v3Client(`${a.url}/Clock/1`);
    apiB = v3Client(baseB);
  }, 60_000);
  afterAll(async () => {
    b?.kill('SIGKILL');
    await a?.close();
    await llm?.close();
  });

  it('B, whose clock is ahead, sees the live lease of A: busy, and A keeps its answer', async () => {
    // B really is ahead: its own clock (the Date header of its answers) says so.
    const health = await request(`${baseB}/health/live`);
    expect(Date.parse(health.headers.get('date') ?? '') - Date.now()).toBeGreaterThan(25_000);

    llm.script(reply.text('first answer'));
    const created = await apiA.say('first');
    expect(created.status).toBe(200);
    const taskId = created.body.task_id;

    // A's request runs until B has been refused and A has renewed its lease since (by B's clock, that
    // lease ran out 30 s ago all along): an event, not a fixed delay.
    let release!: () => void;
    llm.script(reply.text('long answer', { until: new Promise<void>((r) => (release = r)) }), reply.text('stolen answer'));
    const long = apiA.say('a long one', { task_id: taskId });
    await llm.waitForRequest(1);
    const leaseOf = async () => (await view.getTask(DEV_TENANT_ID, taskId))?.lease?.expiresAt ?? 0;
    const granted = await leaseOf();
    const onB = await apiB.say('while it runs', { task_id: taskId });
    expect([onB.status, onB.body.code]).toEqual([409, 'TASK_BUSY']);
    await waitFor(async () => expect(await leaseOf()).toBeGreaterThan(granted));

    release();
    const done = await long;
    expect(done.status).toBe(200);
    const task = await apiA.task(taskId);
    expect(task.body.requests.map((r: { status: string; output: string }) => [r.status, r.output])).toEqual([
      ['Completed', 'first answer'],
      ['Completed', 'long answer'],
    ]);
    llm.discard();
  }, 30_000);

  it('the lease of B, whose clock is ahead, lapses on time once B dies', async () => {
    llm.script(reply.text('first answer'));
    const created = await apiA.say('first');
    const taskId = created.body.task_id;

    llm.script(reply.hang());
    const before = llm.requests.length;
    const doomed = apiB.say('dies with its process', { task_id: taskId }).catch((e: unknown) => e);
    await llm.waitForRequest(before);
    b!.kill('SIGKILL');
    await doomed;

    // Within a lease, a clock allowance and some slack: not the 30 s of B's clock lead.
    llm.script(reply.text('after the crash'));
    const deadline = Date.now() + 10_000;
    let last = await apiA.say('next', { task_id: taskId });
    while (last.status === 409 && Date.now() < deadline) {
      await sleep(250);
      last = await apiA.say('next', { task_id: taskId });
    }
    expect(last.status).toBe(200);
    const task = await apiA.task(taskId);
    expect(task.body.requests.map((r: { status: string; reason: string | null }) => [r.status, r.reason])).toEqual([
      ['Completed', null],
      ['Failed', 'abandoned'],
      ['Completed', null],
    ]);
  }, 30_000);
});
