/**
 * A request whose replica died (kill -9) is closed by the other replica's lease sweep, with nobody
 * touching its task: within the lease plus a grace the request is stored `Failed` (`abandoned`)
 * and the follow-on queued behind it runs — the follow-on was accepted by the replica that died,
 * so no watch of it survives anywhere, and no client calls between the kill and the outcome
 * (the fake model receiving the follow-on's call is the proof; the store is read directly).
 * Two real server processes on one store, on Redis and on DynamoDB Local.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { DYNAMODB_CLOCK_SKEW_MS } from '../../src/state/backends/dynamodb/dynamodb-clock';
import { REDIS_CLOCK_SKEW_MS, RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { RequestRecord } from '../../src/state/state.entities';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import {
  createTestStateTable,
  DYNAMODB_LOCAL,
  dynamoDbServerEnv,
  RedisServerHandle,
  startRedisServer,
  testDynamoDbEndpoint,
  uniqueName,
} from '../support/services';
import { writeAgentDir } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { v3Client } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';
import { POSTGRES_CLOCK_SKEW_MS } from '../../src/state/backends/postgres/postgres.state-store';

const LEASE_MS = 1000;
const SWEEP_MS = 200;
/** Slack for two servers, a fake model and the test itself on a loaded machine. */
const GRACE_MS = 2500;
const AGENT = v3Agent('Sweep', { description: 'Agent whose requests outlive a dead replica', systemPrompt: null, concurrency: { on_busy: 'enqueue' } });

interface Backend {
  name: string;
  skewMs: number;
  /** The servers' environment for this store, and a store of the same data for the test to read. */
  start(): Promise<{ env: Record<string, string>; store: StateStore; stop(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'redis',
    skewMs: REDIS_CLOCK_SKEW_MS,
    async start() {
      // Its own server: no other file's tasks under the servers' default key prefix.
      const redis: RedisServerHandle = await startRedisServer();
      const store = new RedisStateStore({ url: redis.url });
      return { env: { TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url }, store, stop: async () => (await store.close(), await redis.stop()) };
    },
  },
  {
    name: 'dynamodb',
    skewMs: DYNAMODB_CLOCK_SKEW_MS,
    async start() {
      const table = uniqueName('lease-sweep');
      const endpoint = testDynamoDbEndpoint();
      await createTestStateTable(table);
      const store = new DynamoDbStateStore({ table, endpoint, ...DYNAMODB_LOCAL });
      const env = dynamoDbServerEnv(table, endpoint);
      return { env, store, stop: () => store.close() };
    },
  },
  {
    name: 'postgres',
    skewMs: POSTGRES_CLOCK_SKEW_MS,
    async start() {
      const { store, env } = await postgresStores('lease_sweep');
      const own = store();
      return { env, store: own, stop: () => own.close() };
    },
  },
];

/** What `p` resolves to within `ms`, else undefined (the timer does not outlive the wait). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  const timeout = new AbortController();
  try {
    return await Promise.race([p, sleep(ms, undefined, { signal: timeout.signal })]);
  } finally {
    timeout.abort();
  }
}

describe.each(BACKENDS)("a dead replica's requests on $name", (backend) => {
  let llm: FakeOpenAi;
  let backing: Awaited<ReturnType<Backend['start']>>;
  const replicas: CliRun[] = [];

  beforeAll(async () => {
    ensureBuilt();
    llm = await startFakeOpenAi();
    backing = await backend.start();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await backing?.stop();
    await llm?.close();
  });

  async function replica(): Promise<string> {
    const dir = writeAgentDir({ 'sweep.yaml': AGENT });
    const run = runCli(['serve', dir, '--port', '0'], {
      TA_AUTH_MODE: 'dev',
      TA_LOG_LEVEL: 'info',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_TASK_LEASE_MS: String(LEASE_MS),
      TA_LEASE_SWEEP_MS: String(SWEEP_MS),
      ...backing.env,
    });
    replicas.push(run);
    return `http://127.0.0.1:${await run.listening()}/Sweep/1`;
  }

  /** The stored request once it is no longer Running (read from the store: no server is asked). */
  async function settled(requestId: string, withinMs: number): Promise<RequestRecord | undefined> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const r = await backing.store.getRequest(DEV_TENANT_ID, requestId);
      if (r?.status !== 'Running' || Date.now() > deadline) return r;
      await sleep(50);
    }
  }

  it('closes the request as abandoned and runs the follow-on queued behind it, within the lease plus a grace, with nobody polling', async () => {
    const [doomedBase, liveBase] = await Promise.all([replica(), replica()]);
    const doomed = v3Client(doomedBase);

    // Two tasks, each with a request running on the doomed replica (its model call never answers).
    llm.script(reply.text('first answer'), reply.text('first answer'));
    const [t1, t2] = [(await doomed.say('first')).body.task_id as string, (await doomed.say('first')).body.task_id as string];
    llm.script(reply.hang(), reply.hang());
    const hung = [doomed.say('dies with its process', { task_id: t1 }).catch(() => undefined), doomed.say('dies too', { task_id: t2 }).catch(() => undefined)];
    await llm.waitForRequest(3);
    // Task 1 gets a follow-on queued behind it, accepted by the doomed replica (its watch dies with it).
    const queued = await doomed.say('queued behind it', { task_id: t1 });
    expect(queued.status).toBe(202);
    expect(queued.body.status).toBe('Queued');
    const running = async (taskId: string) => (await backing.store.getTask(DEV_TENANT_ID, taskId))!.lease!.requestId;
    const [dead1, dead2] = [await running(t1), await running(t2)];
    llm.script(reply.text('recovered answer'));

    replicas[0]!.child.kill('SIGKILL');
    const killedAt = Date.now();
    await Promise.all(hung);
    const bound = LEASE_MS + backend.skewMs + SWEEP_MS + GRACE_MS;

    // Nobody calls either server from here: the live replica's sweep must find both tasks itself.
    const call = await within(llm.waitForRequest(4), bound);
    const elapsed = call ? Date.now() - killedAt : Infinity;
    expect(elapsed).toBeLessThan(bound);
    expect(JSON.stringify(call!.body.messages.at(-1))).toContain('queued behind it');

    const closed = await settled(dead2, Math.max(0, bound - (Date.now() - killedAt)));
    expect(closed).toMatchObject({ status: 'Failed', reason: 'abandoned', error: { code: 'ABANDONED' } });
    expect(await settled(dead1, 0)).toMatchObject({ status: 'Failed', reason: 'abandoned' });
    expect((await backing.store.getTask(DEV_TENANT_ID, t2))?.status).toBe('Failed');

    // The follow-on's answer is stored; both tasks read as the store has them, on the live replica.
    const follow = await settled(queued.body.request_id, 5000);
    expect(follow).toMatchObject({ status: 'Completed', output: 'recovered answer' });
    const live = v3Client(liveBase);
    const statuses = async (taskId: string) =>
      (await live.task(taskId)).body.requests.map((r: { status: string; reason: string | null }) => [r.status, r.reason]);
    expect(await statuses(t1)).toEqual([
      ['Completed', null],
      ['Failed', 'abandoned'],
      ['Completed', null],
    ]);
    expect(await statuses(t2)).toEqual([
      ['Completed', null],
      ['Failed', 'abandoned'],
    ]);
    expect((await live.task(t2)).body).toMatchObject({ status: 'Failed', running_request_id: null });
  }, 30_000);
});
