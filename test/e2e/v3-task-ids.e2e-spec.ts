/**
 * v3 ids as upstream's: a `session_id` is any id-shaped string the caller chooses, and a `task_id`
 * the caller names that does not exist creates that task, owned by the caller (upstream's
 * `_manage_incoming_task`). Invariants, on the memory store, on Redis and on DynamoDB Local (two
 * app instances sharing each, as two replicas):
 * - a named task is created once: of two callers racing to create the same id (held at a barrier
 *   until both have found it missing) exactly one owns it; the other is 401 when it is another
 *   user, 409 TASK_BUSY when it is the owner again; the task holds exactly the winner's request;
 * - ownership is unchanged: another user's named task is still 401 to follow on and 404 to read;
 * - a malformed id is a 422 naming the field.
 * Only the model vendor is fake.
 */
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { JsonResponse, postJson, request } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testRedisUrl, uniqueName } from '../support/services';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp } from '../support/test-app';
import { modelInput, text, v3Client } from '../support/v3-client';
import { postgresStores } from '../support/postgres-stores';

const agent = (name: string, model = 'gpt-test') => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: Named task ids
spec:
  agent:
    name: default
    model: ${model}
    system_prompt: Be brief.
`;

/**
 * Holds the first `parties` reads of one task id until all of them have arrived, so that every
 * racing caller has found the task missing before any of them creates it: the create race happens
 * every time, not by luck of timing. Shared by the stores of both app instances (one replica
 * serializes its writes to a task, so the racers must be on different instances). If the parties
 * never all arrive, it opens after a while and `met` stays false, for the test to report.
 */
class ReadBarrier {
  private taskId?: string;
  private parties = 0;
  private arrived = 0;
  private open!: () => void;
  private opened = Promise.resolve();
  met = false;

  arm(taskId: string, parties: number): void {
    this.taskId = taskId;
    this.parties = parties;
    this.arrived = 0;
    this.met = false;
    this.opened = new Promise<void>((resolve) => {
      this.open = resolve;
      setTimeout(resolve, 3000).unref();
    });
  }

  async pass(taskId: string): Promise<void> {
    if (taskId !== this.taskId || this.arrived >= this.parties) return;
    if (++this.arrived === this.parties) {
      this.met = true;
      this.open();
    }
    await this.opened;
  }

  /** A store whose `getTask` passes the barrier first; everything else goes straight to `store`. */
  wrap(store: StateStore): StateStore {
    return new Proxy(store, {
      get: (target, prop) => {
        if (prop === 'getTask') {
          return async (tenantId: string, taskId: string) => {
            await this.pass(taskId);
            return target.getTask(tenantId, taskId);
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}

interface Backend {
  name: string;
  /** The stores of two app instances on one backend, as two replicas. */
  stores(): Promise<StateStore[]>;
}

const backends: Backend[] = [
  {
    name: 'memory',
    stores: async () => {
      const shared = new MemoryStateStore();
      return [shared, shared];
    },
  },
  {
    name: 'redis',
    stores: async () => {
      const keyPrefix = `${uniqueName('v3-task-ids')}:`;
      return [0, 1].map(() => new RedisStateStore({ url: testRedisUrl(), keyPrefix }));
    },
  },
  {
    name: 'dynamodb',
    stores: async () => {
      const table = uniqueName('v3-task-ids');
      await createTestStateTable(table);
      return [0, 1].map(() => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL }));
    },
  },
  {
    name: 'postgres',
    stores: async () => {
      const { store } = await postgresStores('v3_task_ids');
      return [store(), store()];
    },
  },
];

const ALICE = { 'x-dev-user': 'alice' };
const BOB = { 'x-dev-user': 'bob' };
const outcome = (r: JsonResponse) => `${r.status}${r.body?.code ? ` ${r.body.code}` : ''}`;

describe.each(backends)('named v3 task ids on $name', ({ stores }) => {
  let llm: FakeOpenAi;
  let apps: TestApp[];
  const barrier = new ReadBarrier();
  /** The agent on instance `i` (wrapping around), as `who`. */
  const api = (i: number, who: Record<string, string>, agentName = 'Named') => v3Client(`${apps[i % apps.length]!.url}/${agentName}/1`, who);

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
    const agents = { 'named.yaml': agent('Named'), 'other.yaml': agent('Other') };
    apps = await Promise.all((await stores()).map((s) => startTestApp({ agents, env, store: barrier.wrap(s) })));
  }, 60_000);
  afterAll(async () => {
    await Promise.all((apps ?? []).map((a) => a.close()));
    await llm?.close();
  });
  afterEach(() => expect(llm.discard()).toBe(0));

  it('a task_id that does not exist creates that task, owned by the caller; the next message follows on', async () => {
    const taskId = `ticket:${uniqueName('t')}.a_b`;
    llm.script(reply.text('created'), reply.text('followed'));
    const first = await api(0, ALICE).say('hello', { task_id: taskId, session_id: 'crm.session:42' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ task_id: taskId, session_id: 'crm.session:42', status: 'Completed', content: { task_id: taskId, output: 'created' } });
    const second = await api(1, ALICE).say('again', { task_id: taskId });
    expect(second.body).toMatchObject({ task_id: taskId, session_id: 'crm.session:42', status: 'Completed' });
    expect(modelInput(llm.requests.at(-1)!.body).slice(1)).toEqual([
      ['user', 'hello'],
      ['assistant', 'created'],
      ['user', 'again'],
    ]);
    const task = await api(1, ALICE).task(taskId);
    expect(task.body).toMatchObject({ task_id: taskId, session_id: 'crm.session:42', status: 'Completed' });
    expect(task.body.requests).toHaveLength(2);
    const session = await request(`${apps[0]!.url}/Named/1/sessions/crm.session:42`, { headers: ALICE });
    expect(session.body.tasks.map((t: { task_id: string }) => t.task_id)).toContain(taskId);

    // ownership is unchanged: Bob may not follow on Alice's named task (401) nor read it (404)
    expect(outcome(await api(0, BOB).say('mine now?', { task_id: taskId }))).toBe('401 NOT_OWNER');
    expect(outcome(await api(1, BOB).task(taskId))).toBe('404 TASK_NOT_FOUND');
    expect((await api(0, ALICE).task(taskId)).body.requests).toHaveLength(2);
  });

  it('two users racing to create one task_id: exactly one owns it, the other gets 401; the task holds only the winner’s request', async () => {
    for (let round = 0; round < 4; round++) {
      const taskId = uniqueName(`race${round}`);
      llm.script(reply.text('won'));
      barrier.arm(taskId, 2);
      const [a, b] = await Promise.all([api(round, ALICE).say('alice', { task_id: taskId }), api(round + 1, BOB).say('bob', { task_id: taskId })]);
      expect(barrier.met).toBe(true); // both found it missing: the create itself was raced
      expect([outcome(a), outcome(b)].sort()).toEqual(['200', '401 NOT_OWNER']);
      const [winner, who] = a.status === 200 ? [a, ALICE] : [b, BOB];
      const task = await api(round, who).task(taskId);
      expect(task.body.requests.map((r: { request_id: string; status: string }) => [r.request_id, r.status])).toEqual([[winner.body.request_id, 'Completed']]);
      expect(outcome(await api(round, who === ALICE ? BOB : ALICE).task(taskId))).toBe('404 TASK_NOT_FOUND');
    }
  });

  it('the owner racing itself to create one task_id: one request runs, the other is 409 TASK_BUSY', async () => {
    const taskId = uniqueName('self');
    let release!: () => void;
    llm.script(reply.text('only once', { until: new Promise<void>((r) => (release = r)) }));
    barrier.arm(taskId, 2);
    const calls = [api(0, ALICE).say('one', { task_id: taskId }), api(1, ALICE).say('two', { task_id: taskId })];
    const loser = await Promise.race(calls);
    expect(barrier.met).toBe(true);
    expect(outcome(loser)).toBe('409 TASK_BUSY');
    release();
    const both = await Promise.all(calls);
    expect(both.map(outcome).sort()).toEqual(['200', '409 TASK_BUSY']);
    expect((await api(0, ALICE).task(taskId)).body.requests).toHaveLength(1);
  });

  it('a task_id held by another agent of the tenant cannot be created here: 409 VERSION_CONFLICT, nothing stored', async () => {
    const taskId = uniqueName('taken');
    llm.script(reply.text('other agent'));
    expect(outcome(await api(0, ALICE, 'Other').say('hi', { task_id: taskId }))).toBe('200');
    const here = await api(1, ALICE).say('hi', { task_id: taskId });
    expect(outcome(here)).toBe('409 VERSION_CONFLICT');
    expect(here.body.detail).toContain('another agent');
    expect(outcome(await api(0, ALICE).task(taskId))).toBe('404 TASK_NOT_FOUND');
    expect((await api(1, ALICE, 'Other').task(taskId)).body.requests).toHaveLength(1);
  });

  it('POST /sse with a new task_id creates it too', async () => {
    const taskId = uniqueName('streamed');
    llm.script(reply.chunks(['str', 'eamed']));
    const s = await openSse(`${apps[0]!.url}/Named/1/sse`, { task_id: taskId, items: [text('go')] }, ALICE);
    const events = parseSse(await s.readAll()).filter((e) => !e.comment);
    const final = JSON.parse(events.at(-1)!.data);
    expect([events.at(-1)!.event, final.task_id, final.status, final.content.output]).toEqual(['final-response', taskId, 'Completed', 'streamed']);
    expect((await api(1, ALICE).task(taskId)).body.requests).toHaveLength(1);
  });
});

describe('malformed v3 ids', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ agents: { 'named.yaml': agent('Named', 'local/echo') } });
  });
  afterAll(() => t?.close());

  it.each([
    ['an empty string', ''],
    ['129 characters', 'x'.repeat(129)],
    ['a space', 'a b'],
    ['a slash', 'a/b'],
    ['a number', 42],
  ])('session_id or task_id with %s is a 422 problem naming the field; nothing runs', async (_what, bad) => {
    for (const field of ['session_id', 'task_id']) {
      const res = await postJson(`${t.url}/Named/1`, { items: [text('x')], [field]: bad });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', errors: [{ field, message: expect.stringContaining('128 characters') }] });
    }
  });

  it('a malformed id in a path is a 422 naming the parameter', async () => {
    const cases: [string, string][] = [
      [`/tasks/${'x'.repeat(129)}`, 'task_id'],
      ['/tasks/a%20b', 'task_id'],
      ['/sessions/a%20b', 'session_id'],
    ];
    for (const [path, field] of cases) {
      const res = await request(`${t.url}/Named/1${path}`);
      expect([res.status, res.body.errors]).toEqual([422, [{ field, message: expect.stringContaining('128 characters') }]]);
    }
    const cancel = await postJson(`${t.url}/Named/1/tasks/a%20b/cancel`, {});
    expect([cancel.status, cancel.body.errors[0].field]).toEqual([422, 'task_id']);
  });
});
