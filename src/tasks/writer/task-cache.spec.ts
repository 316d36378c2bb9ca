import pino from 'pino';
import { loadEnvConfig } from '../../config/env.config';
import { MemoryStateStore } from '../../state/backends/memory/memory.state-store';
import { TaskWrite } from '../../state/state-store';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { admitFollowOn, admitNew } from '../lifecycle/admit';
import { finish } from '../lifecycle/finish';
import { markDeleting } from '../lifecycle/delete';
import { requestRecord, taskRecord } from '../lifecycle/lifecycle.fixtures';
import { TaskCache } from './task-cache';
import { TaskWriterService } from './task-writer.service';

/** The memory store as a shared store would look to the writer (not in this process), counting reads and commits. */
class SharedStore extends MemoryStateStore {
  override readonly inProcess = false;
  reads = 0;
  commits: TaskWrite[] = [];
  override async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    this.reads++;
    return super.getTask(tenantId, taskId);
  }
  lists = 0;
  override async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    this.lists++;
    return super.listRequests(tenantId, taskId);
  }
  override async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    this.commits.push(write);
    return super.commit(tenantId, write);
  }
}

const env = loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_TASK_LEASE_MS: '60000' });
const access = { tenantId: 'ten', taskId: 't', agentSource: 'A:1', ownerId: 'o', foreign: 'not-owner' as const };
const fresh = (seq: number, id = `r${seq}`) =>
  requestRecord(seq, 'Running', {
    requestId: id,
    messages: [{ id: `m${seq}`, role: 'user', items: [{ content_type: 'text', content: `turn ${seq}` }], created_at: 'c' }],
  });
const done = (r: RequestRecord): RequestRecord => ({ ...r, status: 'Completed', output: 'ok' });

describe('TaskWriterService with its cache (a shared store)', () => {
  let store: SharedStore;
  let writer: TaskWriterService;
  const now = () => writer.now();
  beforeEach(() => {
    store = new SharedStore({ sweepIntervalMs: 0 });
    writer = new TaskWriterService(store, env, pino({ level: 'silent' }));
  });

  /** Creates the task, finishes its first request, and runs `turns` more follow-ons on `w`. */
  async function conversation(w: TaskWriterService, turns: number): Promise<void> {
    const created = await w.create('ten', admitNew(taskRecord({ version: 0, status: 'Running' }), fresh(0), now(), w.timing));
    await w.update(access, finish(done(created.result.request), w.timing));
    for (let seq = 1; seq <= turns; seq++) {
      const { result } = await w.update(access, admitFollowOn({ request: fresh(seq, `f${seq}-${Math.random()}`), onBusy: 'reject', timing: w.timing }));
      if (result.kind !== 'run') throw new Error('not admitted');
      expect(result.earlier.map((r) => r.seq)).toEqual(Array.from({ length: seq }, (_, i) => i));
      await w.update(access, finish(done(result.request), w.timing));
    }
  }

  it('commits a conversation from what it wrote: no read per turn, each commit pinned to the last writeId', async () => {
    await conversation(writer, 5);
    expect(store.reads + store.lists).toBe(0);
    expect(store.commits).toHaveLength(12);
    for (const [i, c] of store.commits.entries()) if (i > 0) expect(c.expectedWriteId).toBe(store.commits[i - 1]!.task.writeId);
    const stored = await store.listRequests('ten', 't');
    expect(stored.map((r) => [r.seq, r.status])).toEqual(Array.from({ length: 6 }, (_, i) => [i, 'Completed']));
  });

  it('another replica wrote since: the cached commit loses, the writer re-reads and decides on what is stored', async () => {
    const other = new TaskWriterService(store, env, pino({ level: 'silent' }));
    await conversation(writer, 1);
    // Replica B runs turn 2 to its end; A's view still says version 4.
    const { result } = await other.update(access, admitFollowOn({ request: fresh(2, 'b2'), onBusy: 'reject', timing: other.timing }));
    if (result.kind !== 'run') throw new Error('not admitted');
    await other.update(access, finish(done(result.request), other.timing));
    store.lists = 0;
    const admitted = await writer.update(access, admitFollowOn({ request: fresh(3, 'a3'), onBusy: 'reject', timing: writer.timing }));
    if (admitted.result.kind !== 'run') throw new Error('not admitted');
    expect(admitted.result.request.seq).toBe(3);
    expect(admitted.result.earlier.map((r) => r.requestId)).toEqual(['r0', expect.stringMatching(/^f1-/), 'b2']);
    expect(store.lists).toBe(1); // the requests read once, after the cached commit lost
  });

  it('refuses nothing on its view alone: a lease the view still shows is checked against the store', async () => {
    const other = new TaskWriterService(store, env, pino({ level: 'silent' }));
    const created = await writer.create('ten', admitNew(taskRecord({ version: 0, status: 'Running' }), fresh(0), now(), writer.timing));
    // B ends the request A started (as after a handover); A's view still shows the lease held.
    await other.update(access, finish(done(created.result.request), other.timing));
    const { result } = await writer.update(access, admitFollowOn({ request: fresh(1), onBusy: 'reject', timing: writer.timing }));
    expect(result.kind).toBe('run');
  });

  it('a task deleted and created again to the same version by another replica is not written from the old view', async () => {
    const other = new TaskWriterService(store, env, pino({ level: 'silent' }));
    await conversation(writer, 0); // version 2, cached by A
    await other.update(access, markDeleting());
    while (!(await store.deleteTaskBatch('ten', 't', 100)));
    // Another owner's task under the same id, brought to version 2 as well.
    const theirs = { ...access, ownerId: 'intruder' };
    const created = await other.create(
      'ten',
      admitNew(taskRecord({ version: 0, status: 'Running', ownerId: 'intruder' }), fresh(0, 'x0'), now(), other.timing),
    );
    await other.update(theirs, finish(done(created.result.request), other.timing));
    expect((await store.getTask('ten', 't'))!.version).toBe(2);
    await expect(writer.update(access, admitFollowOn({ request: fresh(1), onBusy: 'reject', timing: writer.timing }))).rejects.toMatchObject({
      code: 'NOT_OWNER',
    });
    const after = await store.getTask('ten', 't');
    expect(after).toMatchObject({ ownerId: 'intruder', version: 2 });
  });

  it('reads as it writes: owner-checked, from the view only when asked for it and the view may stand in, else from the store', async () => {
    await conversation(writer, 2);
    store.reads = store.lists = 0;
    const cached = await writer.read(access, 'all', { cached: true });
    expect(cached.requests.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(await writer.read(access, (t) => [t.queued, 'r0'], { cached: true })).toMatchObject({ requests: [{ requestId: 'r0' }] });
    expect(store.reads + store.lists).toBe(0);
    // An answer about the task as it is now reads the store; so does a refusal, with the store's code.
    expect((await writer.read(access, 'all')).requests).toHaveLength(3);
    expect(store.lists).toBe(1);
    const reads = store.reads;
    await expect(writer.read({ ...access, ownerId: 'x' }, 'all', { cached: true })).rejects.toMatchObject({ code: 'NOT_OWNER' });
    await expect(writer.read({ ...access, ownerId: 'x', foreign: 'not-found' }, 'all', { cached: true })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    await expect(writer.read({ ...access, agentSource: 'B:1' }, 'all', { cached: true })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    expect(store.reads - reads).toBe(3);
  });

  it("finds a request's task in the views it holds, else in the store", async () => {
    await conversation(writer, 1);
    const getRequest = jest.spyOn(store, 'getRequest');
    expect(await writer.taskOfRequest('ten', 'r0', { cached: true })).toBe('t');
    expect(getRequest).not.toHaveBeenCalled();
    expect(await writer.taskOfRequest('ten', 'r0')).toBe('t');
    expect(await writer.taskOfRequest('other', 'r0', { cached: true })).toBeUndefined();
    expect(await writer.taskOfRequest('ten', 'nope', { cached: true })).toBeUndefined();
    expect(getRequest).toHaveBeenCalledTimes(3);
  });

  it('keeps no cache for a store in this process', async () => {
    const local = new MemoryStateStore({ sweepIntervalMs: 0 });
    const spy = jest.spyOn(local, 'getTask');
    const w = new TaskWriterService(local, env, pino({ level: 'silent' }));
    const created = await w.create('ten', admitNew(taskRecord({ version: 0, status: 'Running' }), fresh(0), now(), w.timing));
    await w.update(access, finish(done(created.result.request), w.timing));
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

describe('TaskCache', () => {
  const task = (version: number) => taskRecord({ version, writeId: `w${version}` });
  const big = (seq: number, chars: number) => requestRecord(seq, 'Completed', { output: 'x'.repeat(chars) });

  it('merges the written records into the view it was decided on, and freezes what it holds', () => {
    const cache = new TaskCache({ maxEntries: 10, maxBytes: 1e6, idleMs: 60_000 });
    cache.remember('k', task(1), [], [requestRecord(0, 'Running')]);
    const v1 = cache.get('k')!;
    cache.remember('k', task(2), v1.requests, [requestRecord(0, 'Completed'), requestRecord(1, 'Running')]);
    const v2 = cache.get('k')!;
    expect(v2.task.version).toBe(2);
    expect(v2.requests.map((r) => [r.seq, r.status])).toEqual([
      [0, 'Completed'],
      [1, 'Running'],
    ]);
    expect(Object.isFrozen(v2.requests[1])).toBe(true);
    expect(Object.isFrozen(v2.requests[1]!.messages)).toBe(true);
  });

  it('an older version does not replace a newer view (a late answer)', () => {
    const cache = new TaskCache({ maxEntries: 10, maxBytes: 1e6, idleMs: 60_000 });
    cache.remember('k', task(3), [], []);
    cache.remember('k', task(2), [], []);
    expect(cache.get('k')!.task.version).toBe(3);
  });

  it('is bounded in bytes and entries, least recently used first, no entry over a sixteenth, and drops idle entries', () => {
    const cache = new TaskCache({ maxEntries: 100, maxBytes: 16_000, idleMs: 60_000 });
    for (let i = 0; i < 18; i++) cache.remember(`t${i}`, task(1), [], [big(0, 600)]); // ~850 characters each
    cache.get('t0'); // used: t1 is now the least recently used
    for (let i = 18; i < 24; i++) cache.remember(`t${i}`, task(1), [], [big(0, 600)]);
    expect(cache.size.bytes).toBeLessThanOrEqual(16_000);
    expect(cache.get('t0')).toBeDefined();
    expect(cache.get('t1')).toBeUndefined();
    expect(cache.get('t23')).toBeDefined();
    cache.remember('large', task(1), [], [big(0, 1200)]); // over 16,000 / 16: read from the store instead
    expect(cache.get('large')).toBeUndefined();

    const few = new TaskCache({ maxEntries: 3, maxBytes: 16_000, idleMs: 60_000 });
    for (const k of ['a', 'b', 'c', 'd']) few.remember(k, task(1), [], []);
    expect(few.size.entries).toBe(3);
    expect(few.get('a')).toBeUndefined();

    const idle = new TaskCache({ maxEntries: 3, maxBytes: 5000, idleMs: 10 });
    idle.remember('a', task(1), [], []);
    const until = Date.now() + 20;
    while (Date.now() < until);
    expect(idle.get('a')).toBeUndefined();
    expect(idle.size).toEqual({ entries: 0, bytes: 0 });
  });

  it("indexes the held tasks' requests by tenant and id, and forgets them with the task", () => {
    const cache = new TaskCache({ maxEntries: 10, maxBytes: 1e6, idleMs: 60_000 });
    cache.remember('k', task(1), [], [requestRecord(0, 'Completed', { requestId: 'a' }), requestRecord(1, 'Running', { requestId: 'b' })]);
    expect([cache.keyOfRequest('ten', 'a'), cache.keyOfRequest('ten', 'b'), cache.keyOfRequest('other', 'a')]).toEqual(['k', 'k', undefined]);
    cache.delete('k');
    expect(cache.keyOfRequest('ten', 'a')).toBeUndefined();
    // Nothing is left of the tenant's index once its last task goes (the index is bounded by the entries).
    expect((cache as unknown as { byRequest: Map<string, unknown> }).byRequest.size).toBe(0);
  });

  it('built on the view it holds, re-indexes only what a write changed, and keeps the index exact', () => {
    const cache = new TaskCache({ maxEntries: 10, maxBytes: 1e6, idleMs: 60_000 });
    cache.remember('k', task(1), [], [requestRecord(0, 'Completed', { requestId: 'r0' })]);
    // A conversation written turn after turn from the view: every request stays findable.
    for (let seq = 1; seq < 50; seq++)
      cache.remember('k', task(seq + 1), cache.get('k')!.requests, [requestRecord(seq, 'Completed', { requestId: `r${seq}` })]);
    expect(Array.from({ length: 50 }, (_, i) => cache.keyOfRequest('ten', `r${i}`))).toEqual(Array(50).fill('k'));
    // A record replaced at its seq by another request's: the old id is forgotten, the new one found.
    cache.remember('k', task(51), cache.get('k')!.requests, [requestRecord(49, 'Completed', { requestId: 'r49-edited' })]);
    expect([cache.keyOfRequest('ten', 'r49'), cache.keyOfRequest('ten', 'r49-edited'), cache.keyOfRequest('ten', 'r48')]).toEqual([undefined, 'k', 'k']);
    expect(cache.get('k')!.requests.map((r) => r.requestId)).toEqual([...Array.from({ length: 49 }, (_, i) => `r${i}`), 'r49-edited']);
    // Grown past its share from the view: neither the entry nor any of its index entries is kept.
    const small = new TaskCache({ maxEntries: 10, maxBytes: 16 * 2000, idleMs: 60_000 });
    small.remember('s', task(1), [], [requestRecord(0, 'Completed', { requestId: 's0' })]);
    small.remember('s', task(2), small.get('s')!.requests, [requestRecord(1, 'Completed', { requestId: 's1', output: 'x'.repeat(3000) })]);
    expect([small.get('s'), small.keyOfRequest('ten', 's0'), small.keyOfRequest('ten', 's1'), small.size]).toEqual([
      undefined,
      undefined,
      undefined,
      { entries: 0, bytes: 0 },
    ]);
  });

  it('a request written again at its seq under its own id (running, then ended) stays indexed, its bytes exact', () => {
    const cache = new TaskCache({ maxEntries: 10, maxBytes: 1e6, idleMs: 60_000 });
    const json = (r: RequestRecord) => [JSON.stringify(r)];
    const first = requestRecord(0, 'Completed', { requestId: 'r0' });
    cache.remember('k', task(1), [], [first], json(first));
    const running = requestRecord(1, 'Running', { requestId: 'r1' });
    cache.remember('k', task(2), cache.get('k')!.requests, [running], json(running));
    const ended = requestRecord(1, 'Completed', { requestId: 'r1', output: 'the answer' });
    cache.remember('k', task(3), cache.get('k')!.requests, [ended], json(ended));
    expect([cache.keyOfRequest('ten', 'r0'), cache.keyOfRequest('ten', 'r1')]).toEqual(['k', 'k']);
    expect(cache.size.bytes).toBe(JSON.stringify(cache.get('k')!.requests[0]).length + JSON.stringify(cache.get('k')!.requests[1]).length);
    // Written again once ended (measured afresh, not from a kept size): still exact.
    const edited = requestRecord(1, 'Completed', { requestId: 'r1', output: 'a longer answer than before' });
    cache.remember('k', task(4), cache.get('k')!.requests, [edited]);
    expect(cache.size.bytes).toBe(JSON.stringify(cache.get('k')!.requests[0]).length + JSON.stringify(cache.get('k')!.requests[1]).length);
  });

  it('holds nothing when disabled', () => {
    const cache = new TaskCache({ maxEntries: 10, maxBytes: 0, idleMs: 60_000 });
    cache.remember('k', task(1), [], []);
    expect(cache.get('k')).toBeUndefined();
  });
});
