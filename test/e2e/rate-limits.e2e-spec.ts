/**
 * Rate limits (docs/configuration.md, "Rate limits"): two replicas on one real Redis share every
 * window, so of M concurrent requests split across them exactly N are admitted; the refused get
 * 429 RATE_LIMITED with Retry-After and the RateLimit headers. `spec.limits` overrides the
 * TA_RATE_LIMIT_* defaults; concurrency holds a slot while a request runs; model tokens fill a
 * token window; health and docs are never limited. Then the same on the memory store (one replica).
 */
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { JsonResponse, postJson, request } from '../support/http';
import { testRedisUrl, uniqueName } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';
import { text } from '../support/v3-client';
import { refusedUpgrade, streamSocket, wsUrl } from '../support/ws-client';

const v1 = (name: string, model: string, limits = '') => `apiVersion: skagents/v1
kind: Chat
service_name: ${name}
version: 1
description: ${name}
input_type: BaseInput
spec:
  agent:
    name: default
    model: ${model}
${limits}`;

const AGENTS = {
  // TA_RATE_LIMIT_CALLER_RPM applies.
  'echo.yaml': v1('Echo', 'local/echo'),
  // spec.limits: no per-caller limit (0 lifts the default), 7 a minute for everyone together.
  'busy.yaml': v1('Busy', 'local/echo', '  limits:\n    caller_rpm: 0\n    agent_rpm: 7\n'),
  'tokens.yaml': v1('Tokens', 'gpt-test', '  limits:\n    caller_rpm: 0\n    caller_tpm: 100\n'),
  'slow.yaml': `apiVersion: tealagents/v1alpha1
name: Slow
version: 1
description: A v3 agent on a slow model
spec:
  agent:
    name: default
    model: gpt-test
  limits:
    caller_rpm: 0
    caller_concurrency: 2
`,
};

const HELLO = { chat_history: [{ role: 'user', content: 'hi' }] };
const as = (user: string) => ({ 'x-dev-user': user });

function expectRateLimited(res: JsonResponse, policy: string) {
  expect(res.status).toBe(429);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  expect(res.headers.get('ratelimit-policy')).toBe(policy);
  expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"${policy.split('"')[1]}";r=0;t=${retryAfter}$`));
}

/** Fires all at once; answers in the order given. */
const all = (calls: (() => Promise<JsonResponse>)[]) => Promise.all(calls.map((c) => c()));
const statuses = (rs: JsonResponse[]) => rs.map((r) => r.status);
const count = (rs: JsonResponse[], status: number) => rs.filter((r) => r.status === status).length;

describe('rate limits: two replicas on one Redis', () => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  let redis: RedisStateStore;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const keyPrefix = `${uniqueName('rate-limits')}:`;
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_RATE_LIMIT_CALLER_RPM: '5' };
    a = await startTestApp({ agents: AGENTS, env, store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }) });
    b = await startTestApp({ agents: AGENTS, env, store: new RedisStateStore({ url: testRedisUrl(), keyPrefix }) });
    redis = new RedisStateStore({ url: testRedisUrl(), keyPrefix });
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.close();
    await llm?.close();
  });

  it('admits exactly N of M concurrent requests across both replicas; a second caller is unaffected', async () => {
    const fired = await all(Array.from({ length: 12 }, (_, i) => () => postJson(`${(i % 2 ? a : b).url}/Echo/1`, HELLO, as('alice'))));
    expect(count(fired, 200)).toBe(5);
    expect(count(fired, 429)).toBe(7);
    for (const r of fired.filter((x) => x.status === 429)) expectRateLimited(r, '"caller-rpm";q=5;w=60');
    // Admitted answers carry the headers too, counting down to 0 (in some order).
    const admitted = fired.filter((r) => r.status === 200);
    expect(admitted.map((r) => r.headers.get('ratelimit-policy'))).toEqual(Array(5).fill('"caller-rpm";q=5;w=60'));
    expect(admitted.map((r) => /r=(\d+)/.exec(r.headers.get('ratelimit') ?? '')?.[1]).sort()).toEqual(['0', '1', '2', '3', '4']);

    const bob = await postJson(`${a.url}/Echo/1`, HELLO, as('bob'));
    expect(bob.status).toBe(200);
    expect(bob.headers.get('ratelimit')).toMatch(/^"caller-rpm";r=4;t=\d+$/);
  });

  it('spec.limits overrides the environment: no caller limit, an agent limit shared by every caller', async () => {
    const fired = await all(Array.from({ length: 10 }, (_, i) => () => postJson(`${(i % 2 ? a : b).url}/Busy/1`, HELLO, as('carol'))));
    // More than the env's 5 for one caller: caller_rpm: 0 lifted it; 7 is the agent's.
    expect(count(fired, 200)).toBe(7);
    for (const r of fired.filter((x) => x.status === 429)) expectRateLimited(r, '"agent-rpm";q=7;w=60');
    expectRateLimited(await postJson(`${b.url}/Busy/1`, HELLO, as('dave')), '"agent-rpm";q=7;w=60');
  });

  it('holds a concurrency slot while a request runs, on either replica; a finished one frees it', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const before = llm.requests.length;
    llm.script(reply.text('one', { until: gate }), reply.text('two', { until: gate }));
    const slow = (app: TestApp) => postJson(`${app.url}/Slow/1`, { items: [text('hi')] }, as('erin'));
    const first = slow(a);
    const second = slow(b);
    await llm.waitForRequest(before + 1);
    expectRateLimited(await slow(a), '"caller-concurrency";q=2;qu="concurrent-requests"');
    // Another caller has slots of their own.
    llm.script(reply.text('frank'));
    expect((await postJson(`${b.url}/Slow/1`, { items: [text('hi')] }, as('frank'))).status).toBe(200);
    open();
    expect(statuses(await Promise.all([first, second]))).toEqual([200, 200]);
    // A slot is given back when its response closed: at most a moment after the client read it.
    llm.script(reply.text('three'));
    let third = await slow(b);
    for (let i = 0; i < 20 && third.status === 429; i++) third = await new Promise((r) => setTimeout(r, 25)).then(() => slow(b));
    expect(third.status).toBe(200);
    // 1 left once both slots are back (0 if the other release is still on its way).
    expect(third.headers.get('ratelimit')).toMatch(/^"caller-concurrency";r=[01];t=0$/);
  });

  it('refuses on tokens once the model usage filled the caller window (on the other replica too)', async () => {
    llm.script(reply.text('long answer', { usage: { prompt_tokens: 90, completion_tokens: 60 } }));
    const first = await postJson(`${a.url}/Tokens/1`, HELLO, as('gina'));
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit')).toBe('"caller-tpm";r=100;t=0');
    // 150 of 100 tokens: 50 over at 0.6 s a token, so about 30 s until there is room.
    const refused = await postJson(`${b.url}/Tokens/1`, HELLO, as('gina'));
    expectRateLimited(refused, '"caller-tpm";q=100;w=60');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(29);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(31);
    expect(llm.pending()).toBe(0);
  });

  it('never limits health, docs and task reads', async () => {
    // alice has used her 5 requests of Echo.
    expectRateLimited(await postJson(`${a.url}/Echo/1`, HELLO, as('alice')), '"caller-rpm";q=5;w=60');
    const paths = [
      '/Echo/1/health',
      '/Echo/1/health/live',
      '/Echo/1/health/ready',
      '/Echo/1/openapi.json',
      '/Echo/1/docs',
      '/Echo/1/redoc',
      '/Slow/1/sessions',
    ];
    const answers = await all(paths.flatMap((p) => Array.from({ length: 8 }, () => () => request(`${a.url}${p}`, { headers: as('alice') }))));
    expect(answers.filter((r) => r.status === 429)).toEqual([]);
    expect(answers.every((r) => r.headers.get('ratelimit') === null)).toBe(true);
  });
});

describe('rate limits: the memory store (one replica)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({
      agents: { 'echo.yaml': AGENTS['echo.yaml'], 'streams.yaml': v1('Streams', 'local/echo') },
      env: { TA_RATE_LIMIT_CALLER_RPM: '3', TA_RATE_LIMIT_AGENT_RPM: '4' },
    });
  });
  afterAll(() => t?.close());

  it('admits exactly N of M per caller, then the agent limit for everyone', async () => {
    const fired = await all(Array.from({ length: 6 }, () => () => postJson(`${t.url}/Echo/1`, HELLO, as('alice'))));
    expect(count(fired, 200)).toBe(3);
    for (const r of fired.filter((x) => x.status === 429)) expectRateLimited(r, '"caller-rpm";q=3;w=60');
    expect(fired.find((r) => r.status === 200)?.headers.get('ratelimit-policy')).toBe('"caller-rpm";q=3;w=60, "agent-rpm";q=4;w=60');
    expect((await postJson(`${t.url}/Echo/1`, HELLO, as('bob'))).status).toBe(200);
    expectRateLimited(await postJson(`${t.url}/Echo/1`, HELLO, as('carol')), '"agent-rpm";q=4;w=60');
  });

  it('counts SSE and the /stream socket too: a refused one is a 429 before any stream opens', async () => {
    const sse = await postJson(`${t.url}/Streams/1/sse`, HELLO, as('hal'));
    expect(sse.status).toBe(200);
    expect(sse.headers.get('ratelimit')).toMatch(/^"caller-rpm";r=2;t=\d+/);
    const socket = await streamSocket(`${wsUrl(t.url)}/Streams/1/stream`, JSON.stringify(HELLO), { headers: as('hal') });
    expect(socket.code).toBe(1000);
    expect(socket.headers['ratelimit']).toMatch(/^"caller-rpm";r=1;t=\d+/);
    expect((await postJson(`${t.url}/Streams/1/sse`, HELLO, as('hal'))).status).toBe(200);
    expectRateLimited(await postJson(`${t.url}/Streams/1/sse`, HELLO, as('hal')), '"caller-rpm";q=3;w=60');
    const refused = await refusedUpgrade(`${wsUrl(t.url)}/Streams/1/stream`, as('hal'));
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({ code: 'RATE_LIMITED' });
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused.headers['ratelimit-policy']).toBe('"caller-rpm";q=3;w=60');
  });
});
