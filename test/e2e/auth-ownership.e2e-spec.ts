import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import type { StateStore } from '../../src/state/state-store';
import { fakeModelEnv } from '../support/fake-model-app';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { JsonResponse, postJson, request } from '../support/http';
import { entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text } from '../support/v3-client';
import { postgresStore } from '../support/postgres-stores';

/**
 * Ownership by Entra identity (API.md §4), with real tokens from a local issuer:
 * - another user of the same tenant cannot follow on, resume or cancel a task (401, the upstream
 *   contract), nor read it or its session (404: a read never confirms someone else's task exists);
 * - another tenant sees nothing at all (404 everywhere): the tenant is part of every store key, so
 *   naming the task id creates a separate task of its own (upstream's create-by-task_id);
 * - a session id reused by another user is a new, separate session.
 * Run against Redis (the shared backend the tests must prove), and the in-memory default.
 */

const AGENT = v3Agent('Assistant', { version: '0.1', description: 'Ownership test agent', model: 'local/echo' });

/** On a fake OpenAI-compatible server, so that a request can be held running. */
const SLOW_AGENT = v3Agent('Slow', { description: 'Agent whose model call can hang' });

const T1 = 'c0ffee00-0000-4000-8000-0000000000b1';
const T2 = 'c0ffee00-0000-4000-8000-0000000000b2';
const ALICE = { tid: T1, oid: 'a11ce000-0000-4000-8000-000000000001' };
const BOB = { tid: T1, oid: 'b0b00000-0000-4000-8000-000000000002' };
const ORCHESTRATOR = { tid: T1, oid: '0c0c0c0c-0000-4000-8000-000000000003', kind: 'app' as const };
const CAROL_T2 = { tid: T2, oid: 'ca501000-0000-4000-8000-000000000004' };
type Who = typeof ALICE | typeof ORCHESTRATOR;

const backends: [string, () => StateStore | Promise<StateStore>][] = [
  ['redis', () => new RedisStateStore({ url: testRedisUrl(), keyPrefix: `${uniqueName('auth-ownership')}:` })],
  ['postgres', () => postgresStore('auth_ownership')],
  ['memory', () => new MemoryStateStore()],
];

describe.each(backends)('ownership by (tid, oid) on the %s store', (_backend, newStore) => {
  let issuer: OidcIssuer;
  let llm: FakeOpenAi;
  let t: TestApp;
  let store: StateStore;
  let base: string;

  beforeAll(async () => {
    issuer = await startOidcIssuer();
    llm = await startFakeOpenAi();
    store = await newStore();
    t = await startTestApp({
      agents: { 'a.yaml': AGENT, 'slow.yaml': SLOW_AGENT },
      store,
      env: fakeModelEnv(llm, entraEnv(issuer, { TA_ENTRA_ALLOWED_TENANTS: `${T1},${T2}`, TA_ENTRA_REQUIRED_ROLES: 'Agents.Invoke' })),
    });
    base = `${t.url}/Assistant/0.1`;
  });
  afterAll(async () => {
    await t?.close(); // closes the store too
    await issuer?.close();
    await llm?.close();
  });

  const as = async (who: Who) => ({ authorization: `Bearer ${await issuer.mint(who)}` });
  const say = async (who: Who, body: Record<string, unknown> = {}) => postJson(base, { items: [text('hi')], ...body }, await as(who));
  const get = async (who: Who, path: string) => request(`${base}/${path}`, { headers: await as(who) });
  const post = async (who: Who, path: string, body: unknown) => postJson(`${base}/${path}`, body, await as(who));
  const outcome = (res: JsonResponse) => `${res.status} ${res.body?.code ?? ''}`.trim();

  /** Every operation a caller can attempt on Alice's task, with what it answers. */
  async function attempts(who: Who, task: { task_id: string; session_id: string; request_id: string }, o = { followOns: true }) {
    return {
      followOn: o.followOns ? outcome(await say(who, { task_id: task.task_id })) : undefined,
      followOnSse: o.followOns ? outcome(await post(who, 'sse', { items: [text('x')], task_id: task.task_id })) : undefined,
      resume: outcome(await post(who, `tealagents/v1alpha1/resume/${task.request_id}`, { action: 'approve' })),
      cancel: outcome(await post(who, `tasks/${task.task_id}/cancel`, {})),
      readTask: outcome(await get(who, `tasks/${task.task_id}`)),
      readSession: outcome(await get(who, `sessions/${task.session_id}`)),
    };
  }

  async function snapshot(tenantId: string, taskId: string) {
    const task = await store.getTask(tenantId, taskId);
    return { version: task?.version, requests: (await store.listRequests(tenantId, taskId)).length };
  }

  it('the owner reaches every operation (the refusals below are about identity, not the routes)', async () => {
    const task = (await say(ALICE)).body;
    expect(await attempts(ALICE, task)).toEqual({
      followOn: '200',
      followOnSse: '200',
      resume: '409 TASK_NOT_PAUSED',
      cancel: '409 TASK_NOT_RUNNING',
      readTask: '200',
      readSession: '200',
    });
  });

  it.each([
    ['another user of the same tenant', BOB],
    ['an app-only caller of the same tenant (its service principal is another owner)', ORCHESTRATOR],
  ])("%s cannot follow on, resume or cancel Alice's task (401) nor read it (404)", async (_name, other) => {
    const task = (await say(ALICE)).body;
    const before = await snapshot(T1, task.task_id);
    expect(await attempts(other, task)).toEqual({
      followOn: '401 NOT_OWNER',
      followOnSse: '401 NOT_OWNER',
      resume: '401 NOT_OWNER',
      cancel: '401 NOT_OWNER',
      readTask: '404 TASK_NOT_FOUND',
      readSession: '404 SESSION_NOT_FOUND',
    });
    expect(await snapshot(T1, task.task_id)).toEqual(before);
  });

  it("another tenant cannot see T1's task, request or session at all (404 everywhere); naming the task id creates its own", async () => {
    const task = (await say(ALICE)).body;
    const before = await snapshot(T1, task.task_id);
    expect(await attempts(CAROL_T2, task, { followOns: false })).toEqual({
      followOn: undefined, // below: a follow-on naming the id creates a task in T2
      followOnSse: undefined,
      resume: '404 REQUEST_NOT_FOUND',
      cancel: '404 TASK_NOT_FOUND',
      readTask: '404 TASK_NOT_FOUND',
      readSession: '404 SESSION_NOT_FOUND',
    });
    expect(await snapshot(T1, task.task_id)).toEqual(before);
    // In the store itself, the key carries the tenant: T2 reads nothing under the same ids.
    expect(await store.getTask(T2, task.task_id)).toBeUndefined();
    expect(await store.getRequest(T2, task.request_id)).toBeUndefined();
    expect(await store.listRequests(T2, task.task_id)).toEqual([]);
    expect((await store.listSessionTasks(T2, ALICE.oid, task.session_id, { limit: 10 })).items).toEqual([]);

    // A follow-on naming the id finds no task in T2, so (as upstream) it creates one there, Carol's;
    // Alice's task in T1 is untouched and Carol sees only her own.
    const hers = await say(CAROL_T2, { task_id: task.task_id });
    expect([outcome(hers), hers.body.task_id]).toEqual(['200', task.task_id]);
    expect(hers.body.session_id).not.toBe(task.session_id);
    expect(await snapshot(T1, task.task_id)).toEqual(before);
    expect((await store.getTask(T2, task.task_id))?.ownerId).not.toBe((await store.getTask(T1, task.task_id))?.ownerId);
    expect((await get(CAROL_T2, `tasks/${task.task_id}`)).body.requests.map((r: { request_id: string }) => r.request_id)).toEqual([hers.body.request_id]);
    expect((await get(ALICE, `tasks/${task.task_id}`)).body.requests.map((r: { request_id: string }) => r.request_id)).toEqual([task.request_id]);
  });

  it('the same oid in another tenant is another principal', async () => {
    const task = (await say(ALICE)).body;
    const sameOidOtherTenant = { tid: T2, oid: ALICE.oid };
    expect(outcome(await get(sameOidOtherTenant, `tasks/${task.task_id}`))).toBe('404 TASK_NOT_FOUND');
    // naming the id creates a task of the same id in T2, never a follow-on on the T1 task
    const before = await snapshot(T1, task.task_id);
    expect(outcome(await say(sameOidOtherTenant, { task_id: task.task_id }))).toBe('200');
    expect(await snapshot(T1, task.task_id)).toEqual(before);
    expect(await snapshot(T2, task.task_id)).toEqual({ version: expect.any(Number), requests: 1 });
  });

  it('a session id reused by another user is a new, separate session, never a view of the first', async () => {
    const session = '5e551011-0000-4000-8000-0000000000c1';
    const alice = (await say(ALICE, { session_id: session })).body;
    const bob = await say(BOB, { session_id: session });
    expect(bob.status).toBe(200);
    expect(bob.body.session_id).toBe(session);
    expect(bob.body.task_id).not.toBe(alice.task_id);

    const aliceView = await get(ALICE, `sessions/${session}`);
    const bobView = await get(BOB, `sessions/${session}`);
    expect(aliceView.body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual([alice.task_id]);
    expect(bobView.body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual([bob.body.task_id]);
    // Bob's task is his: Alice cannot follow on it either.
    expect(outcome(await say(ALICE, { task_id: bob.body.task_id }))).toBe('401 NOT_OWNER');
    // And a T2 user with the same session id starts yet another one.
    const carol = await say(CAROL_T2, { session_id: session });
    expect((await get(CAROL_T2, `sessions/${session}`)).body.tasks.map((x: { task_id: string }) => x.task_id)).toEqual([carol.body.task_id]);
  });

  it('a running request can be canceled by its owner only: Bob gets 401, T2 gets 404, and it keeps running', async () => {
    const slow = `${t.url}/Slow/1`;
    llm.script(reply.text('ready'));
    const first = await postJson(slow, { items: [text('begin')] }, await as(ALICE));
    expect(first.status).toBe(200);
    const taskId = first.body.task_id;
    llm.script(reply.hang());
    const pending = postJson(slow, { items: [text('long one')], task_id: taskId }, await as(ALICE));
    const modelCall = await llm.waitForRequest(llm.requests.length);

    const cancel = async (who: Who) => outcome(await postJson(`${slow}/tasks/${taskId}/cancel`, {}, await as(who)));
    expect(await cancel(BOB)).toBe('401 NOT_OWNER');
    expect(await cancel(CAROL_T2)).toBe('404 TASK_NOT_FOUND');
    expect(modelCall.clientDisconnected).toBe(false);
    const running = await request(`${slow}/tasks/${taskId}`, { headers: await as(ALICE) });
    expect(running.body.running_request_id).toEqual(expect.any(String));

    expect(await cancel(ALICE)).toBe('200');
    await modelCall.disconnected;
    expect((await pending).body.status).toBe('Canceled');
  });
});
