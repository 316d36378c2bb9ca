import { createServer } from 'node:net';
import { postJson } from '../support/http';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * How a failing model provider reaches the caller: problem+json with a stable `code` and the status
 * of API.md §4 (429 rate limit with Retry-After, 504 timeout, 502 anything else), the provider's
 * request id in the log, and never the API key.
 */

const AGENT = `
apiVersion: skagents/v2alpha1
name: Bot
version: 1
spec:
  agent:
    name: default
    model: gpt-4o
`;
const API_KEY = 'sk-secret-provider-key-0123456789';
const BODY = { chat_history: [{ role: 'user', content: 'hi' }] };

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function expectProblem(res: { status: number; headers: Headers; body: Record<string, unknown> }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toEqual({
    type: `urn:teal-agent-server:problem:${code.toLowerCase().replace(/_/g, '-')}`,
    title: expect.any(String),
    status,
    detail: expect.any(String),
    instance: '/Bot/1',
    code,
  });
}

describe('model provider failures through the app', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  beforeAll(async () => {
    fake = await startFakeOpenAi();
    t = await startTestApp({
      agents: { 'bot.yaml': AGENT },
      env: { TA_BASE_URL: fake.baseURL, TA_API_KEY: API_KEY, TA_LLM_MAX_RETRIES: '0', TA_LLM_TIMEOUT_MS: '400' },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  it('answers a provider 429 with 429 LLM_RATE_LIMITED and the provider Retry-After', async () => {
    fake.script(reply.error(429, { headers: { 'retry-after': '12' } }));
    const res = await postJson(`${t.url}/Bot/1`, BODY);
    expectProblem(res, 429, 'LLM_RATE_LIMITED');
    expect(res.headers.get('retry-after')).toBe('12');
  });

  it('answers a provider that does not answer in time with 504 LLM_TIMEOUT', async () => {
    fake.script(reply.hang());
    const res = await postJson(`${t.url}/Bot/1`, BODY);
    expectProblem(res, 504, 'LLM_TIMEOUT');
    await fake.requests.at(-1)!.disconnected; // the SDK dropped its request
  });

  it.each([500, 503])('answers a provider %i with 502 LLM_UNAVAILABLE', async (status) => {
    fake.script(reply.error(status));
    expectProblem(await postJson(`${t.url}/Bot/1`, BODY), 502, 'LLM_UNAVAILABLE');
  });

  it('answers a request the provider refuses (400) with 502 LLM_REQUEST_REJECTED: the caller did nothing wrong', async () => {
    fake.script(reply.error(400));
    expectProblem(await postJson(`${t.url}/Bot/1`, BODY), 502, 'LLM_REQUEST_REJECTED');
  });

  it('logs the failure with the provider status and request id, and never the API key', async () => {
    fake.script(
      reply.error(401, { body: { error: { message: `Incorrect API key provided: ${API_KEY}`, type: 'invalid_request_error', code: 'invalid_api_key' } } }),
    );
    const res = await postJson(`${t.url}/Bot/1`, BODY);
    expectProblem(res, 502, 'LLM_REQUEST_REJECTED');
    expect(res.text).not.toContain(API_KEY);
    const n = fake.requests.length;
    expect(t.logs()).toContainEqual(
      expect.objectContaining({ msg: 'model provider call failed', code: 'LLM_REQUEST_REJECTED', provider_status: 401, provider_request_id: `req_fake_${n}` }),
    );
    expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${API_KEY}`); // it was really used
    expect(t.rawLogs()).not.toContain(API_KEY);
    expect(t.rawLogs()).not.toContain(API_KEY.slice(-12));
  });
});

describe('an unreachable or retried provider', () => {
  it('answers 502 LLM_UNAVAILABLE when nothing listens at the provider URL', async () => {
    const port = await closedPort();
    const t = await startTestApp({
      agents: { 'bot.yaml': AGENT },
      env: { TA_BASE_URL: `http://127.0.0.1:${port}/v1`, TA_API_KEY: API_KEY, TA_LLM_MAX_RETRIES: '0' },
    });
    try {
      const res = await postJson(`${t.url}/Bot/1`, BODY);
      expectProblem(res, 502, 'LLM_UNAVAILABLE');
      expect(t.logs()).toContainEqual(expect.objectContaining({ msg: 'model provider call failed', code: 'LLM_UNAVAILABLE', transport_error: 'ECONNREFUSED' }));
      expect(t.rawLogs()).not.toContain(API_KEY);
    } finally {
      await t.close();
    }
  });

  it('lets the SDK retry as TA_LLM_MAX_RETRIES says', async () => {
    const fake = await startFakeOpenAi();
    const t = await startTestApp({
      agents: { 'bot.yaml': AGENT },
      env: { TA_BASE_URL: fake.baseURL, TA_API_KEY: API_KEY, TA_LLM_MAX_RETRIES: '1' },
    });
    try {
      fake.script(reply.error(503, { headers: { 'retry-after-ms': '1' } }), reply.text('recovered'));
      const res = await postJson(`${t.url}/Bot/1`, BODY);
      expect(res.status).toBe(200);
      expect(res.body.output_raw).toBe('recovered');
      expect(fake.requests).toHaveLength(2);
    } finally {
      await t.close();
      await fake.close();
    }
  });
});
