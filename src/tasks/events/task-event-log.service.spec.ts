import type { EnvConfig } from '../../config/env.config';
import { LoggedEvent, RequestEventLog, TaskEventLogService } from './task-event-log.service';

const limits = { maxBytes: 10_000, streamMaxBytes: 2_000, ttlSeconds: 60, maxPerCaller: 8, maxPerReplica: 256 };
const newLog = (overrides: Partial<typeof limits> = {}) =>
  new TaskEventLogService({ http: { streamReplay: { ...limits, ...overrides } } } as unknown as EnvConfig);
/** An event of about `size` bytes. */
const fill = (events: TaskEventLogService, log: RequestEventLog, count: number, size = 400) => {
  for (let i = 0; i < count; i++) events.append(log, 'partial-response', { output_partial: 'x'.repeat(size) });
};
const replay = async (events: TaskEventLogService, log: RequestEventLog, after: number) => {
  const sent: LoggedEvent[] = [];
  await events.follow(log, after, (e) => sent.push(e), new AbortController().signal);
  return sent.map((e) => `${e.id} ${e.event}`);
};

describe('TaskEventLogService bounds', () => {
  let events: TaskEventLogService;
  afterEach(() => {
    events?.onModuleDestroy();
    jest.useRealTimers();
  });

  it('keeps a stream under its byte bound by dropping its oldest events; a replay from the dropped part sends the outcome only', async () => {
    events = newLog();
    const log = events.open('t', 'k', 0);
    fill(events, log, 10); // ~5 KB: over the 2 KB bound
    events.append(log, 'final-response', { status: 'Completed' });
    events.close(log);
    expect(log.bytes).toBeLessThanOrEqual(limits.streamMaxBytes);
    expect(log.events.at(-1)!.event).toBe('final-response');
    expect(await replay(events, log, 8)).toEqual(['0-9 partial-response', '0-10 final-response']); // exact tail
    expect(await replay(events, log, 0)).toEqual(['0-10 final-response']); // no holes passed off as complete
  });

  it('drops finished logs first, oldest first, to stay under the process bound; a running log keeps its events', () => {
    events = newLog();
    const running = events.open('t', 'running', 0);
    fill(events, running, 3);
    const finished = [0, 1, 2, 3, 4, 5].map((i) => {
      const log = events.open('t', `done-${i}`, 0);
      fill(events, log, 4);
      events.close(log);
      return log;
    });
    expect(events.heldBytes).toBeLessThanOrEqual(limits.maxBytes);
    expect(events.get('t', 'running', 0)).toBe(running);
    expect(running.dropped).toBe(-1);
    expect(events.get('t', 'done-0', 0)).toBeUndefined();
    expect(events.get('t', 'done-5', 0)).toBe(finished[5]);
  });

  it('trims running logs when finished ones are not enough, never their last event', () => {
    events = newLog({ maxBytes: 3_000, streamMaxBytes: 100_000 });
    const a = events.open('t', 'a', 0);
    const b = events.open('t', 'b', 0);
    fill(events, a, 5);
    fill(events, b, 5);
    expect(events.heldBytes).toBeLessThanOrEqual(3_000);
    expect(a.dropped).toBeGreaterThanOrEqual(0);
    expect(a.events.length).toBeGreaterThanOrEqual(1);
    expect(b.events.at(-1)!.n).toBe(4);
  });

  it('expires a finished log after the TTL, and a deleted task’s logs at once', () => {
    jest.useFakeTimers();
    events = newLog({ ttlSeconds: 1 });
    const done = events.open('t', 'k', 0);
    events.append(done, 'final-response', {});
    events.close(done);
    const running = events.open('t', 'k', 1);
    jest.advanceTimersByTime(1_500);
    expect(events.get('t', 'k', 0)).toBeUndefined();
    expect(events.get('t', 'k', 1)).toBe(running); // running logs never expire
    events.forget('t', 'k');
    expect(events.get('t', 'k', 1)).toBeUndefined();
    expect(running.done).toBe(true);
    expect(events.heldBytes).toBe(0);
  });
});

describe('TaskEventLogService JSON hand-off', () => {
  it('hands each event with its JSON to the followers listening when it is logged, and keeps only its data', async () => {
    const events = newLog();
    try {
      const log = events.open('t', 'k', 0);
      const live: (string | undefined)[] = [];
      const following = events.follow(log, -1, (e) => live.push(e.json), new AbortController().signal);
      const data = { output_partial: 'héllo "quoted"\n' };
      const logged = events.append(log, 'partial-response', data);
      events.close(log);
      await following;
      expect(live).toEqual([JSON.stringify(data)]);
      // Measured from that same JSON, in UTF-8 bytes.
      expect(logged.size).toBe(Buffer.byteLength(JSON.stringify(data)) + 'partial-response'.length);
      // Not kept: a later replay gets the data and serializes it itself.
      expect(log.events[0]!.json).toBeUndefined();
      const replayed: LoggedEvent[] = [];
      await events.follow(log, -1, (e) => replayed.push(e), new AbortController().signal);
      expect(replayed.map((e) => [e.json, e.data])).toEqual([[undefined, data]]);
    } finally {
      events.onModuleDestroy();
    }
  });
});
