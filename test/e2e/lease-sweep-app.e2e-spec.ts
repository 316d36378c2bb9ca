/**
 * The lease sweep inside one app (src/tasks/run/lease-sweeper.service.ts), on a store the test holds:
 * a request left `Running` by a dead process (a lease that lapsed, written straight into the store)
 * reads as `Failed`/`abandoned` at once, is stored so by the sweep with nobody calling, and the
 * follow-on queued behind it runs; the sweep outlives a store error and stops with its app.
 * (Two real processes and kill -9: lease-sweep.e2e-spec.ts.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DEV_OWNER_ID, DEV_TENANT_ID } from '../../src/auth/principal';
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { LeaseEntry, Page } from '../../src/state/state-store';
import { RequestRecord, TaskRecord } from '../../src/state/state.entities';
import { StateStoreUnavailableError } from '../../src/state/state.errors';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { text, v3Client } from '../support/v3-client';

const AGENT = v3Agent('Swept', { model: 'local/echo', systemPrompt: null, concurrency: { on_busy: 'enqueue' } });

/** A memory store whose lease listing can fail, and counts its calls. */
class FlakyStore extends MemoryStateStore {
  listings = 0;
  failNext = 0;
  override async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    this.listings++;
    if (this.failNext > 0 && this.failNext--) throw new StateStoreUnavailableError('the store stalled (test)');
    return super.listLapsedLeases(before, page);
  }
}

/**
 * A task whose request `dead` holds a lease that lapsed a second ago (its process died), with
 * `queued` waiting behind it; or (`drained`) as a draining replica leaves it: `dead` ended Failed
 * `shutdown`, and the lease, lapsed at once, in the waiting request's name (lifecycle/finish.ts).
 */
async function deadTask(store: MemoryStateStore, queued?: string, drained = false): Promise<{ taskId: string; dead: string }> {
  const taskId = `task-${Math.random().toString(36).slice(2)}`;
  const now = new Date().toISOString();
  const request = (seq: number, requestId: string, status: RequestRecord['status']): RequestRecord => ({
    requestId,
    taskId,
    sessionId: 'session-1',
    tenantId: DEV_TENANT_ID,
    ownerId: DEV_OWNER_ID,
    seq,
    status,
    messages: [{ id: `m-${requestId}`, role: 'user', items: [text(`turn ${seq}`) as { content_type: 'text'; content: string }], created_at: now }],
    toolCalls: [],
    tokenUsage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 },
    createdAt: now,
    updatedAt: now,
  });
  const dead = `${taskId}-r0`;
  const first = drained ? { ...request(0, dead, 'Failed'), reason: 'shutdown' as const } : request(0, dead, 'Running');
  const requests = [first, ...(queued ? [request(1, queued, 'Queued')] : [])];
  const task: TaskRecord = {
    taskId,
    sessionId: 'session-1',
    tenantId: DEV_TENANT_ID,
    ownerId: DEV_OWNER_ID,
    agent: 'Swept:1',
    status: drained ? 'Failed' : 'Running',
    version: 0,
    requestCount: requests.length,
    lease: drained && queued ? { requestId: queued, expiresAt: store.now() } : { requestId: dead, expiresAt: store.now() - 1000 },
    ...(queued ? { queued } : {}),
    lastEventSeq: 0,
    metadata: {},
    createdAt: now,
    updatedAt: now,
  };
  await store.commit(DEV_TENANT_ID, { task, expectedVersion: 0, requests });
  return { taskId, dead };
}

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > deadline) return v;
    await sleep(20);
  }
}

describe('the lease sweep of one app', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    for (const a of apps) await a.close();
  });
  const start = async (store: MemoryStateStore, sweepMs: number) => {
    const t = await startTestApp({ agents: { 'swept.yaml': AGENT }, env: { TA_TASK_LEASE_MS: '1000', TA_LEASE_SWEEP_MS: String(sweepMs) }, store });
    apps.push(t);
    return t;
  };

  it('a GET shows a request whose lease lapsed as Failed, abandoned, before anything is written', async () => {
    const store = new MemoryStateStore();
    const t = await start(store, 0); // no sweep: only the read
    const { taskId, dead } = await deadTask(store);

    const got = await v3Client(`${t.url}/Swept/1`).task(taskId);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ status: 'Failed', running_request_id: null });
    expect(got.body.requests).toMatchObject([{ request_id: dead, status: 'Failed', reason: 'abandoned', error: { code: 'ABANDONED' } }]);
    // A read writes nothing: the store still holds what the dead process left.
    expect((await store.getRequest(DEV_TENANT_ID, dead))?.status).toBe('Running');
    await store.close();
  });

  it('stores the dead request Failed and runs the follow-on queued behind it, with nobody calling; a store error only delays it', async () => {
    const store = new FlakyStore();
    store.failNext = 1;
    const t = await start(store, 50);
    const { taskId, dead } = await deadTask(store, 'follow-on');

    const done = await until(
      () => store.getRequest(DEV_TENANT_ID, 'follow-on'),
      (r) => r?.status === 'Completed',
      3000,
    );
    expect(done).toMatchObject({ status: 'Completed', output: 'turn 1' });
    expect(await store.getRequest(DEV_TENANT_ID, dead)).toMatchObject({ status: 'Failed', reason: 'abandoned', error: { code: 'ABANDONED' } });
    expect((await store.getTask(DEV_TENANT_ID, taskId))?.lease).toBeUndefined();
    expect(t.logs().some((l) => l.msg === 'lease sweep failed; trying again on the next pass')).toBe(true);
    expect(t.logs().find((l) => l.msg === 'lease sweep: recovered a task from a lapsed lease')).toMatchObject({
      task_id: taskId,
      lapsed_request_id: dead,
      next_request_id: 'follow-on',
    });
    // Nothing is left in the index.
    expect((await store.listLapsedLeases(store.now(), { limit: 10 })).items).toEqual([]);

    // A follow-on a draining replica left waiting (its lease released, lapsed at once) runs too.
    const drained = await deadTask(store, 'after-drain', true);
    expect(
      await until(
        () => store.getRequest(DEV_TENANT_ID, 'after-drain'),
        (r) => r?.status === 'Completed',
        3000,
      ),
    ).toMatchObject({ status: 'Completed' });
    expect((await store.getRequest(DEV_TENANT_ID, drained.dead))?.reason).toBe('shutdown');

    // The sweep stops with its app.
    await t.close();
    apps.splice(apps.indexOf(t), 1);
    const calls = store.listings;
    await sleep(200);
    expect(store.listings).toBe(calls);
    await store.close();
  });
});
