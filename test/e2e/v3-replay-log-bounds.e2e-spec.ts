/**
 * The per-process replay log of v3 streams (src/tasks/events/task-event-log.service.ts) is bounded in bytes and in
 * time (docs/configuration.md, TA_STREAM_REPLAY_*): finished streams do not stay on the heap past
 * the budget, and a reconnect whose Last-Event-ID falls in what was dropped gets the request's
 * outcome (its final events), never a replay with holes presented as complete.
 *
 * The heap figure is the live heap after a forced full GC (`--expose-gc`, switched on from here
 * through V8's flags), measured in this process, which runs the real app.
 */
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { fullGc } from '../support/kept-heap';
import { openSse, parseSse, SseEvent } from '../support/sse-reader';
import { testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { text } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Big
version: 1
description: Agent with long answers
spec:
  agent:
    name: default
    model: gpt-test
`;

const MiB = 1024 * 1024;
const named = (events: SseEvent[]) =>
  events.filter((e) => e.event).map((e) => ({ id: e.id!, event: e.event!, data: JSON.parse(e.data) as Record<string, unknown> }));

/** Live heap after full collections (a few, so weak references and finalizers settle). */
async function liveHeap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    fullGc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

/** `count` chunks of `size` characters each, distinct per call so nothing is shared with the test. */
function bigAnswer(count: number, size: number): string[] {
  const tag = Math.random().toString(36).slice(2, 8);
  return Array.from({ length: count }, (_, i) => `${tag}${i}`.padEnd(size, 'x'));
}

describe('bounds of the v3 replay log', () => {
  let llm: FakeOpenAi;
  let app: TestApp;
  const sse = (body: unknown, headers: Record<string, string> = {}) => openSse(`${app.url}/Big/1/sse`, body, headers);

  async function stream(chunks: string[], extra: Record<string, unknown> = {}) {
    llm.script(reply.chunks(chunks));
    return named(parseSse(await (await sse({ items: [text('long')], ...extra })).readAll()));
  }

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const env = {
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_LOG_LEVEL: 'warn',
      TA_STREAM_REPLAY_MAX_BYTES: String(8 * MiB),
      TA_STREAM_REPLAY_STREAM_MAX_BYTES: String(MiB),
      TA_STREAM_REPLAY_TTL_SECONDS: '2',
    };
    app = await startTestApp({
      agents: { 'b.yaml': AGENT },
      env,
      store: new RedisStateStore({ url: testRedisUrl(), keyPrefix: `${uniqueName('replay-bounds')}:` }),
    });
  });
  afterAll(async () => {
    await app?.close();
    await llm?.close();
  });

  it('24 finished 2 MiB streams keep at most the byte budget (8 MiB) of live heap; an evicted one replays its outcome only', async () => {
    await stream(bigAnswer(4, 1024)); // warm up: first-call allocations are not the log's
    const before = await liveHeap();
    const first = await stream(bigAnswer(32, 64 * 1024));
    for (let i = 1; i < 24; i++) await stream(bigAnswer(32, 64 * 1024));
    const growth = (await liveHeap()) - before;
    process.stdout.write(`replay log: live heap growth after 24 finished 2 MiB streams: ${(growth / MiB).toFixed(1)} MiB\n`);
    expect(growth).toBeLessThan(8 * MiB + 16 * MiB); // the budget, plus slack for the app's own caches

    // The first stream's log was evicted: a reconnect gets the stored outcome, with the final id.
    const taskId = first[0]!.data.task_id as string;
    const again = named(parseSse(await (await sse({ task_id: taskId, items: [text('long')] }, { 'last-event-id': first[3]!.id })).readAll()));
    expect(again.map((e) => e.event)).toEqual(['final-response']);
    expect(again[0]!.data).toMatchObject({ task_id: taskId, status: 'Completed' });
    expect((again[0]!.data.content as { output: string }).output).toHaveLength(2 * MiB);
  }, 60_000);

  it('a stream over the per-stream bound (1 MiB) replays its tail exactly; an id in the dropped head gets the outcome only', async () => {
    const events = await stream(bigAnswer(40, 16 * 1024)); // 640 KiB of deltas and the same in the final answer: the head is dropped
    const taskId = events[0]!.data.task_id as string;
    const resume = async (id: string) => named(parseSse(await (await sse({ task_id: taskId, items: [text('long')] }, { 'last-event-id': id })).readAll()));

    const tail = await resume(events.at(-4)!.id);
    expect(tail.map((e) => e.id)).toEqual(events.slice(-3).map((e) => e.id)); // two partials and the final event, exactly as sent
    expect(tail.every((e, i) => JSON.stringify(e.data) === JSON.stringify(events.at(i - 3)!.data))).toBe(true);
    const head = await resume(events[1]!.id);
    expect(head.map((e) => [e.id, e.event])).toEqual([[events.at(-1)!.id, 'final-response']]);
    expect(JSON.stringify(head[0]!.data) === JSON.stringify(events.at(-1)!.data)).toBe(true);
  }, 30_000);

  it('a finished stream expires from the log (TA_STREAM_REPLAY_TTL_SECONDS): a later reconnect is served from the store, as on another replica', async () => {
    const events = await stream(['one ', 'two ', 'three']);
    const taskId = events[0]!.data.task_id as string;
    await new Promise((r) => setTimeout(r, 3_000));
    const again = named(parseSse(await (await sse({ task_id: taskId, items: [text('long')] }, { 'last-event-id': events[0]!.id })).readAll()));
    expect(again).toEqual(events.slice(1)); // the store's stream log: the same events and ids
    expect(again.at(-1)!.data).toMatchObject({ task_id: taskId, status: 'Completed', content: { output: 'one two three' } });
  }, 15_000);
});
