/**
 * Event ids across the streams of one request (hardening item 17): the first run of a request that
 * pauses, its resume stream, a second pause and its resume all number their events `{seq}-{n}` with
 * n strictly increasing across every stream, however long one is (here a first run longer than the
 * old fixed offset of 100,000 per pause), and a reconnect with an id from any of them replays
 * exactly what follows it.
 */
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { fakeModelEnv } from '../support/fake-model-app';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { getSse, openSse, parseSse, SseEvent } from '../support/sse-reader';
import { testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { NOTES_WIPE_PLUGIN, v3Agent } from '../support/v3-agents';

const AGENTS = {
  'ids.yaml': v3Agent('Ids', { description: 'Resume ids e2e', systemPrompt: 'Be careful.', plugins: ['Notes'], governance: { autonomy_level: 'L1' } }),
  'custom_plugins.js': NOTES_WIPE_PLUGIN,
};
const tc = (id: string) => ({ id, name: 'Notes-wipe', arguments: JSON.stringify({ id }) });
const nOf = (e: SseEvent) => Number(e.id!.split('-')[1]);
const real = (text: string) => parseSse(text).filter((e) => !e.comment);

describe('v3 resume stream ids', () => {
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    t = await startTestApp({ agents: AGENTS, env: fakeModelEnv(llm) });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('a long first run, a resume, a second pause and resume: ids distinct and increasing; each id replays exactly the rest', async () => {
    const many = Array.from({ length: 100_050 }, () => 'x');
    llm.script(reply.toolCalls([tc('a')], { chunks: many }));
    const first = real(await (await openSse(`${t.url}/Ids/1/sse`, { items: [{ content_type: 'text', content: 'go' }] })).readAll());
    const paused = JSON.parse(first.at(-1)!.data);
    expect(paused).toMatchObject({ status: 'Paused' });
    expect(first.length).toBeGreaterThan(100_000);

    llm.script(reply.toolCalls([tc('b')], { chunks: ['y', 'y', 'y'] }));
    const resumeUrl = `${t.url}/Ids/1/tealagents/v1alpha1/resume/${paused.request_id}/sse`;
    const second = real(await (await openSse(resumeUrl, { action: 'approve' })).readAll());
    expect(JSON.parse(second.at(-1)!.data)).toMatchObject({ status: 'Paused', request_id: paused.request_id });

    llm.script(reply.chunks(['do', 'ne']));
    const third = real(await (await openSse(resumeUrl, { action: 'approve' })).readAll());
    expect(JSON.parse(third.at(-1)!.data)).toMatchObject({ status: 'Completed', request_id: paused.request_id });

    const all = [...first, ...second, ...third];
    const seq = all[0]!.id!.split('-')[0];
    expect(all.every((e) => e.id!.split('-')[0] === seq)).toBe(true);
    const ns = all.map(nOf);
    expect(new Set(ns).size).toBe(ns.length);
    for (let i = 1; i < ns.length; i++) if (ns[i]! <= ns[i - 1]!) throw new Error(`id ${all[i]!.id} after ${all[i - 1]!.id}`);

    // One id from each stream (the first run's within the replay window of 5,000 events).
    for (const from of [first.at(-3)!, first.at(-1)!, second[0]!, second.at(-1)!, third[0]!]) {
      const at = all.findIndex((e) => e.id === from.id);
      const replay = real(await (await getSse(`${t.url}/Ids/1/tasks/${paused.task_id}/stream`, { 'last-event-id': from.id! })).readAll());
      expect(replay.map((e) => [e.id, e.event])).toEqual(all.slice(at + 1).map((e) => [e.id, e.event]));
    }
  }, 120_000);

  describe('across replicas (shared Redis): the resumes run where only the stored stream log knows the earlier ids', () => {
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      const dir = writeAgentDir(AGENTS);
      const keyPrefix = `${uniqueName('v3-resume-ids')}:`;
      const env = fakeModelEnv(llm);
      [a, b] = await Promise.all([0, 1].map(() => startTestApp({ configPath: dir, env, store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }) })));
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
    });

    it('ids stay distinct and increasing', async () => {
      llm.script(reply.toolCalls([tc('a')], { chunks: Array.from({ length: 100_050 }, () => 'x') }));
      const first = real(await (await openSse(`${a.url}/Ids/1/sse`, { items: [{ content_type: 'text', content: 'go' }] })).readAll());
      const paused = JSON.parse(first.at(-1)!.data);
      expect(paused).toMatchObject({ status: 'Paused' });
      llm.script(reply.toolCalls([tc('b')]));
      const second = real(await (await openSse(`${b.url}/Ids/1/tealagents/v1alpha1/resume/${paused.request_id}/sse`, { action: 'approve' })).readAll());
      expect(JSON.parse(second.at(-1)!.data)).toMatchObject({ status: 'Paused' });
      llm.script(reply.text('done'));
      const third = real(await (await openSse(`${a.url}/Ids/1/tealagents/v1alpha1/resume/${paused.request_id}/sse`, { action: 'approve' })).readAll());
      expect(JSON.parse(third.at(-1)!.data)).toMatchObject({ status: 'Completed' });
      const ns = [...first, ...second, ...third].map(nOf);
      for (let i = 1; i < ns.length; i++) expect(ns[i]!).toBeGreaterThan(ns[i - 1]!);
    }, 120_000);
  });
});
