import pino from 'pino';
import { loadEnvConfig } from '../../config/env.config';
import { MemoryStateStore } from '../../state/backends/memory/memory.state-store';
import { TaskWrite } from '../../state/state-store';
import { TaskRecord } from '../../state/state.entities';
import { StateStoreUnavailableError } from '../../state/state.errors';
import { renew } from '../lifecycle/finish';
import { requestRecord } from '../lifecycle/lifecycle.fixtures';
import { TaskWriterService } from './task-writer.service';

/** A memory store whose next commits apply but whose answers are lost (a timeout after the write). */
class LosingAnswers extends MemoryStateStore {
  lose = 0;
  refuse = 0;
  commits = 0;
  override async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    this.commits++;
    if (this.refuse > 0) {
      this.refuse--;
      throw new StateStoreUnavailableError('down', undefined, true);
    }
    const stored = await super.commit(tenantId, write);
    if (this.lose > 0) {
      this.lose--;
      throw new StateStoreUnavailableError('timed out');
    }
    return stored;
  }
}

const base: TaskRecord = {
  taskId: 't',
  sessionId: 's',
  tenantId: 'ten',
  ownerId: 'o',
  agent: 'A:1',
  status: 'Running',
  version: 0,
  requestCount: 1,
  lastEventSeq: 0,
  metadata: {},
  createdAt: 'c',
  updatedAt: 'u',
  lease: { requestId: 'r0', expiresAt: Date.now() + 60_000 },
};

describe('TaskWriterService', () => {
  const env = loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_TASK_LEASE_MS: '1000' });
  let store: LosingAnswers;
  let writer: TaskWriterService;
  beforeEach(async () => {
    store = new LosingAnswers();
    writer = new TaskWriterService(store, env, pino({ level: 'silent' }));
    await store.commit('ten', { task: base, expectedVersion: 0 });
  });

  it('a write whose answer was lost is retried as the same write and read back: applied once, answered with the stored task', async () => {
    store.lose = 1;
    const { task } = await writer.update({ tenantId: 'ten', taskId: 't' }, renew('r0', writer.timing));
    expect(task.version).toBe(2); // one write, not two
    expect((await store.getTask('ten', 't'))!.writeId).toBe(task.writeId);
    expect(store.commits).toBe(3); // the create, the lost answer, the retry that conflicted
  });

  it("a caller's write on a store that was never reached fails at once (nothing can have applied)", async () => {
    store.refuse = 1;
    await expect(writer.update({ tenantId: 'ten', taskId: 't' }, renew('r0', writer.timing))).rejects.toBeInstanceOf(StateStoreUnavailableError);
    expect(store.commits).toBe(2);
  });

  it('a persistent write waits out an unavailable store', async () => {
    store.refuse = 3;
    const { task } = await writer.update({ tenantId: 'ten', taskId: 't' }, renew('r0', writer.timing), { persistent: {} });
    expect(task.version).toBe(2);
  });

  it('re-applies the transition to a fresh read after losing a compare-and-set', async () => {
    const real = store.commit.bind(store);
    let raced = false;
    store.commit = async (tenantId, write) => {
      if (!raced && write.expectedVersion === 1) {
        raced = true;
        // another writer goes first (a cancel asked through the task)
        await real(tenantId, { task: { ...base, cancelRequested: 'r0' }, expectedVersion: 1 });
      }
      return real(tenantId, write);
    };
    const { task, result } = await writer.update({ tenantId: 'ten', taskId: 't' }, renew('r0', writer.timing));
    expect(task.version).toBe(3);
    expect(result.cancelRequested).toBe(true);
  });

  it('a task deleted and created again up to the version it was read at is not written over: the writer re-decides on the new one', async () => {
    await store.commit('ten', { task: { ...base, version: 1, writeId: 'old' }, expectedVersion: 1 });
    const real = store.commit.bind(store);
    let raced = false;
    store.commit = async (tenantId, write) => {
      if (!raced && write.expectedVersion === 2) {
        raced = true;
        // Between the writer's read and its commit: a DELETE finishes and a follow-on creates the id
        // anew, whose versions climb again to the one the writer read (the ABA the writeId pins).
        await real(tenantId, { task: { ...base, version: 2, deletingAt: 'now', writeId: 'del' }, expectedVersion: 2 });
        while (!(await store.deleteTaskBatch(tenantId, 't', 50)));
        await real(tenantId, { task: { ...base, writeId: 'new-1' }, expectedVersion: 0 });
        await real(tenantId, { task: { ...base, version: 1, writeId: 'new-2', cancelRequested: 'r0' }, expectedVersion: 1 });
      }
      return real(tenantId, write);
    };
    const { task, result } = await writer.update({ tenantId: 'ten', taskId: 't' }, renew('r0', writer.timing));
    // Decided again on the new incarnation (version 2, writeId new-2), so it sees that one's cancel.
    expect(task.version).toBe(3);
    expect(result.cancelRequested).toBe(true);
  });

  it('checks ownership once: another owner is 401 (or 404 for reads), another agent 404', async () => {
    await expect(writer.read({ tenantId: 'ten', taskId: 't', ownerId: 'x' })).rejects.toMatchObject({ code: 'NOT_OWNER' });
    await expect(writer.read({ tenantId: 'ten', taskId: 't', ownerId: 'x', foreign: 'not-found' })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    await expect(writer.read({ tenantId: 'ten', taskId: 't', agentSource: 'B:1' })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
    await expect(writer.read({ tenantId: 'other', taskId: 't' })).rejects.toMatchObject({ code: 'TASK_NOT_FOUND' });
  });

  it('on a shared store, serializes a written request once: the commit sends that JSON and the cache counts its size from it', async () => {
    class SharedStore extends MemoryStateStore {
      override readonly inProcess = false;
      sent: (readonly string[] | undefined)[] = [];
      override async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
        this.sent.push(write.requestJson);
        return super.commit(tenantId, write);
      }
    }
    const shared = new SharedStore();
    const cached = new TaskWriterService(shared, env, pino({ level: 'silent' }));
    let serialized = 0;
    const counted = { toJSON: () => (serialized++, 'counted') };
    const request = requestRecord(0, 'Running', { taskId: 'u', metadata: counted } as never);
    await cached.create('ten', { task: { ...base, taskId: 'u' }, requests: [request], result: undefined });
    expect(serialized).toBe(1);
    expect(shared.sent).toEqual([[JSON.stringify({ ...request, tenantId: 'ten' })]]);
  });

  it("copies a written request's nested values once: the store and the cache keep the record the writer sealed", async () => {
    class SharedStore extends MemoryStateStore {
      override readonly inProcess = false;
    }
    const shared = new SharedStore();
    const cached = new TaskWriterService(shared, env, pino({ level: 'silent' }));
    // A getter is read by each copy of the message (a copy holds a plain value instead).
    let copies = 0;
    const message = { role: 'user', items: [], created_at: 'c' };
    Object.defineProperty(message, 'id', { enumerable: true, get: () => (copies++, 'm1') });
    const request = requestRecord(0, 'Running', { taskId: 'u', messages: [message] } as never);
    await cached.create('ten', { task: { ...base, taskId: 'u' }, requests: [request], result: undefined });
    expect(copies).toBe(1);
    const stored = await shared.getRequest('ten', request.requestId);
    expect(stored?.messages[0]).toEqual({ ...message, id: 'm1' });
    expect(Object.isFrozen(stored) && Object.isFrozen(stored?.messages) && Object.isFrozen(stored?.messages[0])).toBe(true);
    // The cache's view holds that very record.
    const view = await cached.read({ tenantId: 'ten', taskId: 'u' }, 'all', { cached: true });
    expect(view.requests[0]).toBe(stored);
  });
});
