import type { Logger } from 'pino';
import { MemoryStateStore } from '../../state/backends/memory/memory.state-store';
import { StateStore, StreamEvent } from '../../state/state-store';
import { StateStoreUnavailableError } from '../../state/state.errors';
import { FLUSH_EVENTS, FLUSH_MS, StreamRecorder } from './stream-event-writer.service';

class RecordingStore extends MemoryStateStore {
  readonly writes: StreamEvent[][] = [];
  readonly requestIds: (string | undefined)[] = [];
  fail = false;
  /** Appends that fail as a stalled store does, before one lands. */
  stalls = 0;
  override async appendStreamEvents(_t: string, _k: string, _s: number, events: StreamEvent[], requestId?: string): Promise<void> {
    if (this.fail) throw new Error('store down');
    if (this.stalls > 0 && this.stalls--) throw new StateStoreUnavailableError('Redis is unavailable: Command timed out');
    this.writes.push(events);
    this.requestIds.push(requestId);
  }
}

const logger = { warn: jest.fn() } as unknown as Logger;
const event = (n: number, name = 'partial-response', text = 'x') => ({ id: `0-${n}`, n, event: name, data: { output_partial: text } });
const recorder = (store: StateStore, maxBytes = 1_000_000) =>
  new StreamRecorder(store, logger, { tenantId: 't', taskId: 'k', seq: 0, requestId: 'r-0' }, maxBytes);

describe('StreamRecorder (the stream log writer)', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    jest.mocked(logger.warn).mockClear();
  });
  afterEach(() => jest.useRealTimers());

  it('batches events: one write per FLUSH_MS, at once when a batch fills or the final event comes', async () => {
    const store = new RecordingStore();
    const r = recorder(store);
    r.add(event(0));
    r.add(event(1));
    expect(store.writes).toEqual([]);
    jest.advanceTimersByTime(FLUSH_MS);
    await r.flush();
    expect(store.writes.map((w) => w.map((e) => e.n))).toEqual([[0, 1]]);
    for (let n = 2; n < 2 + FLUSH_EVENTS; n++) r.add(event(n));
    r.add(event(2 + FLUSH_EVENTS, 'final-response'));
    await r.flush();
    expect(store.writes.map((w) => w.length)).toEqual([2, FLUSH_EVENTS, 1]);
    // Every write names its request, so the store can refuse it for a re-created task.
    expect(store.requestIds).toEqual(['r-0', 'r-0', 'r-0']);
  });

  it('stops at the byte bound but always stores the final event', async () => {
    const store = new RecordingStore();
    const r = recorder(store, 100);
    r.add(event(0, 'partial-response', 'a'.repeat(60)));
    r.add(event(1, 'partial-response', 'b'.repeat(60)));
    r.add(event(2, 'final-response', 'c'.repeat(200)));
    await r.flush();
    expect(store.writes.flat().map((e) => e.n)).toEqual([0, 2]);
  });

  it('never fails the request: a failed write is logged once and the log stops', async () => {
    const store = new RecordingStore();
    store.fail = true;
    const r = recorder(store);
    r.add(event(0, 'final-response'));
    await expect(r.flush()).resolves.toBeUndefined();
    store.fail = false;
    r.add(event(1, 'final-response'));
    await r.flush();
    expect(store.writes).toEqual([]);
    expect(logger.warn).toHaveBeenCalledTimes(1);
  });

  it('retries a write the store did not answer (a stall), so nothing is lost; later batches wait their turn', async () => {
    jest.useRealTimers();
    const store = new RecordingStore();
    store.stalls = 2;
    const r = recorder(store);
    r.add(event(0));
    const first = r.flush();
    r.add(event(1, 'final-response'));
    await r.flush();
    await first;
    expect(store.writes.map((w) => w.map((e) => e.n))).toEqual([[0], [1]]);
    expect(logger.warn).not.toHaveBeenCalled();
  });
});
