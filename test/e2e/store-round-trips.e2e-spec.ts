/**
 * Issue 14: a plain v3 turn costs at most two Redis round trips (admit, finish) on the replica that
 * wrote the task last — counted on a redis-server of this file's own with the bench's counter
 * (INFO stats reads; a script or a MULTI block is one) — and the cache that makes it so is never
 * trusted alone: a turn on the other replica reads the task first (four round trips).
 */
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { perTurn, redisCounter, ROUND_TRIPS, StoreCounter } from '../../bench/store-counters';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { RedisServerHandle, startRedisServer } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const AGENT = `
apiVersion: tealagents/v1alpha1
name: Counted
version: 1
description: Agent whose store round trips are counted
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;
const TURNS = 10;

describe('store round trips per plain v3 turn (Redis)', () => {
  let llm: FakeOpenAi;
  let redis: RedisServerHandle;
  let a: TestApp;
  let b: TestApp;
  let counter: StoreCounter;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    redis = await startRedisServer();
    const replica = () =>
      startTestApp({
        agents: { 'counted.yaml': AGENT },
        env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test' },
        store: new RedisStateStore({ url: redis.url, keyPrefix: 'rt:' }),
      });
    [a, b] = await Promise.all([replica(), replica()]);
    counter = redisCounter(redis.url, { commands: false });
    // Connections, script loading and the clock's first sample stay out of the counts.
    for (const t of [a, b]) {
      llm.script(reply.text('warm'));
      expect((await v3Client(`${t.url}/Counted/1`).say('warm up')).status).toBe(200);
    }
  });
  afterAll(async () => {
    await counter?.close();
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
    await llm?.close();
  });

  /** Round trips per turn of `turns()` (which sends `TURNS` turns, one at a time). */
  async function counted(turns: () => Promise<void>): Promise<number> {
    const before = await counter.snapshot();
    await turns();
    return perTurn(before, await counter.snapshot(), TURNS)[ROUND_TRIPS]!;
  }

  it('two per first turn and two per follow-on on the replica that served the task; four on the other', async () => {
    const api = v3Client(`${a.url}/Counted/1`);
    const ids: string[] = [];
    const first = await counted(async () => {
      for (let i = 0; i < TURNS; i++) {
        llm.script(reply.text(`answer ${i}`));
        const r = await api.say(`hello ${i}`);
        expect(r.status).toBe(200);
        ids.push(r.body.task_id);
      }
    });
    const followOn = await counted(async () => {
      for (const [i, id] of ids.entries()) {
        llm.script(reply.text(`again ${i}`));
        expect((await api.say('again', { task_id: id })).status).toBe(200);
      }
    });
    const elsewhere = await counted(async () => {
      for (const [i, id] of ids.entries()) {
        llm.script(reply.text(`there ${i}`));
        expect((await v3Client(`${b.url}/Counted/1`).say('over there', { task_id: id })).status).toBe(200);
      }
    });
    expect({ first, followOn, elsewhere }).toEqual({ first: 2, followOn: 2, elsewhere: 4 });

    // And back on A, whose view is now stale: its cached commit loses, it reads, and the turn sees all of B's.
    llm.script(reply.text('back'));
    const back = await api.say('back on A', { task_id: ids[0] });
    expect(back.status).toBe(200);
    const seen = llm.requests.at(-1)!.body.messages.map((m: { content: unknown }) => JSON.stringify(m.content));
    expect(seen.filter((c: string) => c.includes('over there'))).toHaveLength(1);
    expect(seen.filter((c: string) => c.includes('there 0'))).toHaveLength(1); // B's answer
    expect(seen.filter((c: string) => c.includes('again 0'))).toHaveLength(1);
  });
});
