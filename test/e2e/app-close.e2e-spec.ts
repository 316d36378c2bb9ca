/**
 * An application that is closed stops touching its store: nothing it started keeps polling (issue
 * 20, point 13). A follow-on queued on replica B behind a request running on replica A
 * (`on_busy: enqueue`) is watched by B in the background; that watch's poll loop once outlived
 * B's `app.close()`, polling forever (a closed Redis store answers "unavailable", which it waits
 * out), and kept the process alive: Jest's worker "failed to exit gracefully", and a run of one
 * file never ended. B's store reads are counted through a proxy of the store both replicas share.
 */
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { StateStore } from '../../src/state/state-store';
import { fakeModelEnv } from '../support/fake-model-app';
import { reply, startFakeOpenAi } from '../support/fake-openai.server';
import { startTestApp } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { v3Client } from '../support/v3-client';

const AGENT = v3Agent('Queue', { description: 'Agent that enqueues follow-ons', concurrency: { on_busy: 'enqueue' } });

it("after app.close(), the replica's watch of a queued follow-on reads the store no more", async () => {
  const llm = await startFakeOpenAi();
  const shared = new MemoryStateStore();
  let reads = 0;
  const counted = new Proxy(shared, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (key === 'getTask' || key === 'getRequest') reads++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as StateStore;
  const env = fakeModelEnv(llm);
  const a = await startTestApp({ agents: { 'queue.yaml': AGENT }, env, store: shared });
  const b = await startTestApp({ agents: { 'queue.yaml': AGENT }, env, store: counted });
  let release!: () => void;
  try {
    llm.script(reply.text('first'));
    const taskId = (await v3Client(`${a.url}/Queue/1`).say('one')).body.task_id;
    llm.script(reply.text('second', { until: new Promise<void>((r) => (release = r)) }), reply.text('third'));
    const running = v3Client(`${a.url}/Queue/1`).say('two', { task_id: taskId });
    await llm.waitForRequest(1);
    expect((await v3Client(`${b.url}/Queue/1`).say('three', { task_id: taskId })).status).toBe(202); // queued, watched by B
    await b.close();
    const atClose = reads;
    await new Promise((r) => setTimeout(r, 1500)); // several of the watch's poll intervals
    expect(reads - atClose).toBe(0);
    release();
    await running;
  } finally {
    release?.();
    await a.close();
    await llm.close();
  }
}, 20_000);
