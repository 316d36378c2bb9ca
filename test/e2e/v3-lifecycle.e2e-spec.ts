/**
 * The v3 lifecycle under the faults issue 8 names, each of which broke it before the redesign:
 * a stalled store must not kill a live request (renewal retries until the lease is provably lost);
 * a commit whose answer was lost is read back, not answered 503 and stored twice; a request longer
 * than the task TTL keeps its task alive; enqueue never answers 409 under contention; a pause is
 * decided only by a decision naming it; a queued request that pauses streams its pause; a resume
 * stream can be reconnected; approval TTLs expire pauses on the next read. Two app instances share
 * one real Redis (and, for the races of every transition, PostgreSQL and DynamoDB Local) where
 * replicas matter; only the model vendor is fake.
 */
import Redis from 'ioredis';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { fakeModelEnv } from '../support/fake-model-app';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, RedisServerHandle, startRedisServer, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { postgresStores } from '../support/postgres-stores';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Agent, V3AgentOptions } from '../support/v3-agents';
import { modelInput, text, v3Client } from '../support/v3-client';

const agent = (name: string, o: V3AgentOptions = {}) => v3Agent(name, { description: 'Lifecycle e2e', plugins: ['Notes'], ...o });

const NOTES_PLUGIN = `
const calls = (globalThis.__lifecycleNotes ??= []);
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'wipe', description: 'Deletes a note', parameters: id, risk: 'write_high_risk', handler: ({ id }) => { calls.push(id); return 'wiped ' + id; } },
] }];
`;
const wiped = (): string[] => ((globalThis as { __lifecycleNotes?: string[] }).__lifecycleNotes ??= []);

function agentDir(): string {
  return writeAgentDir({
    'plain.yaml': agent('Plain'),
    'queue.yaml': agent('Queue', { concurrency: { on_busy: 'enqueue' } }),
    'guard.yaml': agent('Guard', { governance: { autonomy_level: 'L1', approval_ttl_seconds: 1 } }),
    'guardq.yaml': agent('GuardQ', { governance: { autonomy_level: 'L1' }, concurrency: { on_busy: 'enqueue' } }),
    'custom_plugins.js': NOTES_PLUGIN,
  });
}

const tc = (id: string, args: unknown) => ({ id, name: 'Notes-wipe', arguments: JSON.stringify(args) });
const named = (raw: string) => parseSse(raw).filter((e) => e.event);

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

describe('v3 lifecycle: store stalls on a Redis of its own (two replicas)', () => {
  let llm: FakeOpenAi;
  let redis: RedisServerHandle;
  let admin: Redis;
  let a: TestApp;
  let b: TestApp;
  /** A replica on this Redis, with a lease of `leaseMs`. */
  let replica: (leaseMs: number) => Promise<TestApp>;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    redis = await startRedisServer({ durable: true });
    admin = new Redis(redis.url);
    const keyPrefix = `${uniqueName('lifecycle')}:`;
    const dir = agentDir();
    const env = fakeModelEnv(llm, { TA_TASK_TTL_SECONDS: '2' });
    replica = (leaseMs) =>
      startTestApp({
        configPath: dir,
        env: { ...env, TA_TASK_LEASE_MS: String(leaseMs) },
        store: new RedisStateStore({ url: redis.url, keyPrefix, timeoutMs: 300 }),
      });
    a = await replica(2100);
    b = await replica(2100);
  }, 30_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    admin?.disconnect();
    await redis?.stop();
    await llm?.close();
  });
  afterEach(() => llm.discard());

  it('a 1.5 s CLIENT PAUSE during a request longer than the lease: follow-ons elsewhere are refused, the answer is kept', async () => {
    llm.script(reply.text('base'));
    const first = await v3Client(`${a.url}/Plain/1`).say('base');
    const taskId = first.body.task_id;
    let release!: () => void;
    llm.script(reply.text('long answer', { until: new Promise<void>((r) => (release = r)) }));
    const long = v3Client(`${a.url}/Plain/1`).say('long', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
    const seen: number[] = [];
    const deadline = Date.now() + 4500; // past the pause plus two lease lengths without renewal
    while (Date.now() < deadline) {
      llm.script(reply.text('must not run'));
      seen.push((await v3Client(`${b.url}/Plain/1`).say('meanwhile', { task_id: taskId })).status);
      llm.discard();
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.filter((s) => s !== 409 && s !== 503)).toEqual([]);
    release();
    const res = await long;
    expect(res.status).toBe(200);
    expect(res.body.content.output).toBe('long answer');
    const task = await v3Client(`${b.url}/Plain/1`).task(taskId);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed']);
  }, 20_000);

  it('redis-server stopped and restarted during a request (outage shorter than the lease): follow-ons are refused, the answer is kept', async () => {
    // A lease longer than the outage plus the reconnect: the holder must keep it through the restart.
    const [c, d] = [await replica(5000), await replica(5000)];
    try {
      llm.script(reply.text('base'));
      const first = await v3Client(`${c.url}/Plain/1`).say('base');
      const taskId = first.body.task_id;
      let release!: () => void;
      llm.script(reply.text('survived a restart', { until: new Promise<void>((r) => (release = r)) }));
      const long = v3Client(`${c.url}/Plain/1`).say('long', { task_id: taskId });
      await llm.waitForRequest(llm.requests.length);
      await redis.stop(); // the append-only file keeps the task, as a production Redis restart does
      const seen: number[] = [];
      const down = Date.now() + 1500;
      while (Date.now() < down) {
        seen.push((await v3Client(`${d.url}/Plain/1`).say('while down', { task_id: taskId })).status);
        await new Promise((r) => setTimeout(r, 200));
      }
      await redis.start();
      const after = Date.now() + 6000; // past a whole lease length after the restart: renewal resumed
      while (Date.now() < after) {
        llm.script(reply.text('must not run'));
        seen.push((await v3Client(`${d.url}/Plain/1`).say('after restart', { task_id: taskId })).status);
        llm.discard();
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(seen.filter((s) => s !== 409 && s !== 503)).toEqual([]);
      expect(seen).toContain(503); // the store was really down
      expect(seen.at(-1)).toBe(409); // and the lease still held a lease length after it came back
      release();
      const res = await long;
      expect([res.status, res.body.content?.output]).toEqual([200, 'survived a restart']);
      const task = await v3Client(`${d.url}/Plain/1`).task(taskId);
      expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed']);
    } finally {
      await c.close();
      await d.close();
    }
  }, 40_000);

  it('a final commit whose answer is lost (CLIENT PAUSE WRITE past the client timeout) is answered 200 and stored once', async () => {
    llm.script(reply.text('base'));
    const first = await v3Client(`${a.url}/Plain/1`).say('base');
    let release!: () => void;
    llm.script(reply.text('kept once', { until: new Promise<void>((r) => (release = r)) }));
    const turn = v3Client(`${a.url}/Plain/1`).say('the turn', { task_id: first.body.task_id });
    await llm.waitForRequest(llm.requests.length);
    await admin.call('CLIENT', 'PAUSE', '1000', 'WRITE');
    release();
    const res = await turn;
    expect(res.status).toBe(200);
    expect(res.body.content.output).toBe('kept once');
    llm.script(reply.text('next'));
    expect((await v3Client(`${b.url}/Plain/1`).say('next', { task_id: first.body.task_id })).status).toBe(200);
    expect(modelInput(llm.requests.at(-1)!.body).filter(([, c]) => c === 'the turn')).toHaveLength(1);
    const task = await v3Client(`${b.url}/Plain/1`).task(first.body.task_id);
    expect(task.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed', 'Completed']);
  }, 20_000);

  it('an admitting commit whose answer is lost is answered with the stored outcome, not 503', async () => {
    llm.script(reply.text('base'));
    const first = await v3Client(`${a.url}/Plain/1`).say('base');
    llm.script(reply.text('after the stall'));
    await admin.call('CLIENT', 'PAUSE', '800', 'WRITE');
    const res = await v3Client(`${a.url}/Plain/1`).say('during the stall', { task_id: first.body.task_id });
    expect(res.status).toBe(200);
    const task = await v3Client(`${b.url}/Plain/1`).task(first.body.task_id);
    expect(task.body.requests).toHaveLength(2);
  }, 20_000);

  it('a request longer than TA_TASK_TTL_SECONDS completes (its own writes keep the task alive)', async () => {
    llm.script(reply.text('slow', { delayMs: 3500 }));
    const res = await v3Client(`${a.url}/Plain/1`).say('slow');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('Completed');
  }, 20_000);
});

/** The shared stores two replicas race every lifecycle transition on: each call is another replica's store. */
const SHARED: { name: string; stores: () => Promise<() => StateStore> }[] = [
  {
    name: 'Redis',
    stores: async () => {
      const keyPrefix = `${uniqueName('lifecycle2')}:`;
      return () => new RedisStateStore({ url: testRedisUrl(), keyPrefix });
    },
  },
  { name: 'PostgreSQL', stores: async () => (await postgresStores('lifecycle2')).store },
];

describe.each(SHARED)('v3 lifecycle on a shared $name (two replicas)', ({ stores }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const store = await stores();
    const dir = agentDir();
    const env = fakeModelEnv(llm);
    a = await startTestApp({ configPath: dir, env, store: store() });
    b = await startTestApp({ configPath: dir, env, store: store() });
  }, 30_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
  });
  beforeEach(() => wiped().splice(0));
  afterEach(() => llm.discard());

  it('30 concurrent follow-ons with on_busy: enqueue: none is 409; the task ends with each Completed or superseded', () => enqueueRace(llm, a, b), 30_000);

  it('a retried approval of an earlier pause (its approval_url, from either replica) is 409 and runs nothing', async () => {
    llm.script(reply.toolCalls([tc('call_0', { id: 'a' })]));
    const p1 = await v3Client(`${a.url}/Guard/1`).say('wipe a');
    expect(p1.body.status).toBe('Paused');
    llm.script(reply.toolCalls([tc('call_0', { id: 'b' })])); // the model numbers calls per turn: the same id again
    const p2 = await postJson(a.url + p1.body.content.approval_url, undefined);
    expect(p2.body.status).toBe('Paused');
    expect(p2.body.pause_id).not.toBe(p1.body.content.pause_id);
    expect(wiped()).toEqual(['a']);
    for (const app of [a, b]) {
      const retried = await postJson(app.url + p1.body.content.approval_url, { action: 'approve' });
      expect([retried.status, retried.body.code]).toEqual([409, 'APPROVAL_ALREADY_DECIDED']);
      const byCall = await postJson(`${app.url}/Guard/1/tealagents/v1alpha1/resume/${p1.body.request_id}`, {
        pause_id: p1.body.content.pause_id,
        decisions: [{ tool_call_id: 'call_0', approved: true }],
      });
      expect(byCall.status).toBe(409);
    }
    expect(wiped()).toEqual(['a']);
    const task = await v3Client(`${b.url}/Guard/1`).task(p1.body.task_id);
    expect(task.body.pending_approvals).toMatchObject([{ pause_id: p2.body.pause_id }]);
    // a decision naming no pause decides the current one (clients of the Python service)
    llm.script(reply.text('done'));
    expect((await postJson(`${b.url}/Guard/1/tealagents/v1alpha1/resume/${p1.body.request_id}`, { action: 'approve' })).body.status).toBe('Completed');
    expect(wiped()).toEqual(['a', 'b']);
  }, 20_000);

  it('an approval TTL expires the pause on the next read: Canceled (expired), a decision is 409 APPROVAL_EXPIRED, nothing runs', async () => {
    llm.script(reply.toolCalls([tc('w1', { id: 'x' })]));
    const paused = await v3Client(`${a.url}/Guard/1`).say('wipe x');
    expect(paused.body.content.expires_at).toEqual(expect.any(String));
    await new Promise((r) => setTimeout(r, 1200));
    const task = await v3Client(`${b.url}/Guard/1`).task(paused.body.task_id);
    expect(task.body).toMatchObject({ status: 'Canceled', pending_approvals: [], requests: [{ status: 'Canceled', reason: 'expired' }] });
    const late = await postJson(a.url + paused.body.content.approval_url, undefined);
    expect([late.status, late.body.code]).toEqual([409, 'APPROVAL_EXPIRED']);
    expect(wiped()).toEqual([]);
  }, 20_000);

  it('a queued follow-on that pauses: its stream ends with the Paused response (no error), also when replayed on the other replica', async () => {
    llm.script(reply.text('base'));
    const first = await v3Client(`${a.url}/GuardQ/1`).say('base');
    const taskId = first.body.task_id;
    let release!: () => void;
    llm.script(reply.text('running', { until: new Promise<void>((r) => (release = r)) }), reply.toolCalls([tc('w1', { id: 'q' })]));
    const running = v3Client(`${a.url}/GuardQ/1`).say('running', { task_id: taskId });
    await llm.waitForRequest(llm.requests.length);
    const queued = await openSse(`${b.url}/GuardQ/1/sse`, { task_id: taskId, items: [text('queued one')] });
    await queued.readUntil((t) => t.includes('event: queued'));
    release();
    await running;
    const events = named(await queued.readAll());
    expect(events.map((e) => e.event)).not.toContain('error');
    const final = JSON.parse(events.at(-1)!.data);
    expect(events.at(-1)!.event).toBe('final-response');
    expect(final).toMatchObject({ status: 'Paused', content: { pause_id: expect.any(String), approval_url: expect.stringContaining('pause_id=') } });
    // the other replica replays it from the store
    const replay = await openSse(`${a.url}/GuardQ/1/sse`, { task_id: taskId, items: [text('x')] }, { 'last-event-id': `${events[0]!.id!.split('-')[0]}-0` });
    const replayed = named(await replay.readAll());
    expect(replayed.map((e) => e.event)).not.toContain('error');
    expect(JSON.parse(replayed.at(-1)!.data)).toMatchObject({ status: 'Paused' });
  }, 20_000);

  it('a resume stream can be reconnected with Last-Event-ID: on the same replica exactly, on the other the outcome', async () => {
    llm.script(reply.toolCalls([tc('w1', { id: 'r' })]));
    const paused = await v3Client(`${a.url}/Guard/1`).say('wipe r');
    llm.script(reply.chunks(['all ', 'done']));
    const resumed = named(await (await openSse(`${a.url}${paused.body.content.approval_url.replace('?', '/sse?')}`, {})).readAll());
    expect(resumed.map((e) => e.event)).toContain('final-response');
    const ids = resumed.map((e) => e.id!);
    const n = ids.map((id) => Number(id.split('-')[1]));
    expect(n).toEqual([...n].sort((x, y) => x - y));
    const body = { task_id: paused.body.task_id, items: [text('x')] };
    const same = named(await (await openSse(`${a.url}/Guard/1/sse`, body, { 'last-event-id': ids[0]! })).readAll());
    expect(same).toEqual(resumed.slice(1));
    const other = named(await (await openSse(`${b.url}/Guard/1/sse`, body, { 'last-event-id': ids[0]! })).readAll());
    expect(other.at(-1)!.event).toBe('final-response');
    expect(JSON.parse(other.at(-1)!.data)).toMatchObject({ status: 'Completed', content: { output: 'all done' } });
  }, 20_000);

  it('GET /tasks shows a reason on every request that did not complete', async () => {
    llm.script(reply.text('base'), reply.error(500));
    const first = await v3Client(`${a.url}/Plain/1`).say('base');
    const failed = await v3Client(`${a.url}/Plain/1`).say('fail', { task_id: first.body.task_id });
    expect(failed.status).toBe(502);
    const task = await request(`${b.url}/Plain/1/tasks/${first.body.task_id}`);
    expect(task.body.requests.map((r: { status: string; reason: string | null }) => [r.status, r.reason])).toEqual([
      ['Completed', null],
      ['Failed', 'failed'],
    ]);
  });
});

/** 30 concurrent follow-ons over two replicas of an enqueueing agent: each is 200 or 202, never 409. */
async function enqueueRace(llm: FakeOpenAi, a: TestApp, b: TestApp): Promise<void> {
  llm.script(reply.text('base'));
  const first = await v3Client(`${a.url}/Queue/1`).say('base');
  const taskId = first.body.task_id;
  for (let i = 0; i < 40; i++) llm.script(reply.text(`answer ${i}`, { delayMs: 20 }));
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => v3Client(`${(i % 2 ? b : a).url}/Queue/1`).say(`q${i}`, { task_id: taskId })));
  expect(results.filter((r) => r.status !== 200 && r.status !== 202).map((r) => r.body)).toEqual([]);
  const task = await until(
    () => v3Client(`${a.url}/Queue/1`).task(taskId),
    (t) => t.body.requests.every((r: { status: string }) => r.status !== 'Running' && r.status !== 'Queued'),
  );
  const requests = task.body.requests as { seq: number; status: string; reason: string | null; request_id: string }[];
  expect(requests.map((r) => r.seq)).toEqual(requests.map((_, i) => i));
  // Each Completed or superseded; a failure names the others with their status and reason.
  expect(requests.filter((r) => !(r.status === 'Completed' || (r.status === 'Canceled' && r.reason === 'superseded')))).toEqual([]);
  for (const r of results.filter((x) => x.status === 200)) expect(requests.find((q) => q.request_id === r.body.request_id)!.status).toBe('Completed');
}

describe('v3 lifecycle on DynamoDB Local (two replicas)', () => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const table = uniqueName('lifecycle');
    await createTestStateTable(table);
    const dir = agentDir();
    const env = fakeModelEnv(llm, { TA_TASK_TTL_SECONDS: '2', TA_TASK_LEASE_MS: '6000' });
    const store = () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    a = await startTestApp({ configPath: dir, env, store: store() });
    b = await startTestApp({ configPath: dir, env, store: store() });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await llm?.close();
  });
  afterEach(() => llm.discard());

  it('30 concurrent follow-ons with on_busy: enqueue: none is 409', () => enqueueRace(llm, a, b), 60_000);

  it('a request longer than TA_TASK_TTL_SECONDS completes', async () => {
    llm.script(reply.text('slow', { delayMs: 3500 }));
    const res = await v3Client(`${a.url}/Plain/1`).say('slow');
    expect([res.status, res.body.status]).toEqual([200, 'Completed']);
    expect((await v3Client(`${b.url}/Plain/1`).task(res.body.task_id)).status).toBe(200);
  }, 20_000);
});
