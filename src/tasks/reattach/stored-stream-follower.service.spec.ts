import type { Logger } from 'pino';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';
import { MemoryStateStore } from '../../state/backends/memory/memory.state-store';
import type { StreamEvent } from '../../state/state-store';
import type { RequestRecord } from '../../state/state.entities';
import { StateStoreUnavailableError } from '../../state/state.errors';
import type { RequestWatcherService } from '../run/request-watcher.service';
import { StoredStreamFollowerService } from './stored-stream-follower.service';
import { OUTCOME_N } from '../events/stream-outcome';
import { LoggedEvent, TaskEventLogService } from '../events/task-event-log.service';
import { TaskReaderService } from '../writer/task-reader.service';
import type { TaskWriterService } from '../writer/task-writer.service';

/** A store whose reads fail (as while it stalls) as long as `down` holds; the request as `record` says. */
class StallingStore extends MemoryStateStore {
  down = false;
  record?: RequestRecord;
  stored: StreamEvent[] = [];
  override async readStreamEvents(_t: string, _k: string, _s: number, after: number): Promise<StreamEvent[]> {
    if (this.down) throw new StateStoreUnavailableError('Redis is unavailable: Command timed out');
    return this.stored.filter((e) => e.n > after);
  }
  override async getRequest(): Promise<RequestRecord | undefined> {
    if (this.down) throw new StateStoreUnavailableError('Redis is unavailable: Command timed out');
    return this.record;
  }
}

const agent = { prefix: '/A/1', source: 'A:1' } as AgentDefinition;
const w = { tenantId: 't', taskId: 'k', requestId: 'r' };
const logger = { warn: jest.fn(), debug: jest.fn(), error: jest.fn() } as unknown as Logger;
const record = (status: RequestRecord['status'], updatedAt = new Date(0).toISOString()) =>
  ({ requestId: 'r', taskId: 'k', sessionId: 's', seq: 0, status, output: 'done', updatedAt, messages: [], toolCalls: [] }) as unknown as RequestRecord;

describe('StoredStreamFollowerService', () => {
  let events: TaskEventLogService;
  let store: StallingStore;
  let follower: StoredStreamFollowerService;

  beforeEach(() => {
    events = new TaskEventLogService({ http: { streamReplay: { maxBytes: 1e6, streamMaxBytes: 1e6, ttlSeconds: 60 } } } as unknown as EnvConfig);
    store = new StallingStore();
    const watcher = { watch: () => Promise.resolve() } as unknown as RequestWatcherService;
    const writer = { timing: { leaseMs: 60_000 }, now: () => Date.now() } as unknown as TaskWriterService;
    follower = new StoredStreamFollowerService(new TaskReaderService(store, writer), events, watcher, writer, logger);
  });
  afterEach(() => events.onModuleDestroy());

  const follow = (first: StreamEvent[], after = -1) => {
    const sent: LoggedEvent[] = [];
    const log = follower.open(agent, w, 0, first);
    return { sent, done: events.follow(log, after, (e) => sent.push(e), new AbortController().signal) };
  };

  it('the store failing is not the request failing: past the bound its streams end without any event, never an error', async () => {
    follower.storeRetryMs = 300;
    store.record = record('Running');
    store.down = true;
    const { sent, done } = follow([{ n: 0, event: 'partial-response', data: { output_partial: 'a' } }]);
    await done;
    expect(sent.map((e) => `${e.id} ${e.event}`)).toEqual(['0-0 partial-response']);
    expect(events.get('t', 'k', 0)).toBeUndefined(); // dropped: a reattach starts afresh
  });

  it('rides out a stall shorter than the bound: the events stored meanwhile, then the outcome', async () => {
    store.record = record('Running');
    store.down = true;
    const { sent, done } = follow([]);
    await new Promise((r) => setTimeout(r, 250));
    store.stored = [
      { n: 0, event: 'partial-response', data: { output_partial: 'a' } },
      { n: 1, event: 'final-response', data: { status: 'Completed' } },
    ];
    store.record = record('Completed');
    store.down = false;
    await done;
    expect(sent.map((e) => `${e.id} ${e.event}`)).toEqual(['0-0 partial-response', '0-1 final-response']);
  });

  it("a record stamped before a stall, seen ended only after it: waits for its final event, queued behind the recorder's retries", async () => {
    // Ended during the stall (its updatedAt long past by the time the commit is visible), its stream's
    // final event still on its way: found by the e2e follower-stall test, which once got the outcome
    // under OUTCOME_N instead of the stream's own last id.
    store.stored = [{ n: 0, event: 'partial-response', data: { output_partial: 'a' } }];
    store.record = record('Completed', new Date(Date.now() - 5_000).toISOString());
    const { sent, done } = follow(store.stored);
    setTimeout(() => store.stored.push({ n: 1, event: 'final-response', data: { status: 'Completed' } }), 400);
    await done;
    expect(sent.map((e) => `${e.id} ${e.event}`)).toEqual(['0-0 partial-response', '0-1 final-response']);
  });

  it('an outcome the stored log lacks (the writer died past its last batch) sorts after every id a client can have seen', async () => {
    store.stored = [{ n: 0, event: 'partial-response', data: { output_partial: 'a' } }];
    store.record = { ...record('Failed'), error: { code: 'ABANDONED', message: 'lost' } } as RequestRecord;
    const { sent, done } = follow(store.stored, 7);
    await done;
    expect(sent.map((e) => [e.id, e.event, e.data.code])).toEqual([[`0-${OUTCOME_N}`, 'error', 'ABANDONED']]);
  });
});
