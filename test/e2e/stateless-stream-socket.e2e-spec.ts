import { decodeJwt } from 'jose';
import type { WebSocket } from 'ws';
import { TELEMETRY } from '../../src/app.tokens';
import { Telemetry } from '../../src/telemetry/telemetry';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { DEFAULT_TENANT, entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { OtlpReceiver, SPAN_KIND, startOtlpReceiver } from '../support/otlp-receiver';
import { AGENT_V2, CHAT_V1, SEQUENTIAL_V1 } from '../support/stateless-agents';
import { TestApp } from '../support/test-app';
import { ECHO_ASSISTANT } from '../support/v3-agents';
import { refusedUpgrade, SocketTranscript, streamSocket, wsUrl } from '../support/ws-client';

/**
 * The deprecated WebSocket `/{name}/{version}/stream` of v1/v2 agents, as upstream serves it and the
 * Assistant Orchestrator consumes it: the first message is the input JSON; each partial text is one
 * text frame (no JSON envelope, no intermediate or final frame: the orchestrator appends every frame
 * to its answer); then a normal close (1000). Refusals happen before the upgrade (401/403 in Entra
 * mode, 404 for v3 agents and unknown paths); bad input closes with 1007 naming the field, an
 * oversize message with 1009, a model failure with 1013/1011 and its error code. Only the model
 * vendor is fake (a real OpenAI-compatible HTTP server), and the client is a real WebSocket client.
 */

const MAX_BODY_BYTES = 2048;
const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const hi = (content = 'hi') => JSON.stringify({ chat_history: [{ role: 'user', content }] });

describe('WebSocket /stream (dev auth)', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let app: FakeModelApp;
  let receiver: OtlpReceiver;
  let ws: string;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    app = await startFakeModelApp({
      agents: { 'chat.yaml': CHAT_V1, 'v2.yaml': AGENT_V2, 'seq.yaml': SEQUENTIAL_V1, 'v3.yaml': ECHO_ASSISTANT },
      // A ping every 150 ms: every stream below also proves that keepalives never become messages.
      env: { TA_MAX_BODY_BYTES: String(MAX_BODY_BYTES), TA_SSE_KEEPALIVE_MS: '150', TA_OTEL_ENDPOINT: receiver.url },
    });
    ({ llm: fake, t } = app);
    ws = wsUrl(t.url);
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  it('v1: sends each partial text as one text frame, nothing else, then closes normally', async () => {
    fake.script(reply.chunks(['Hel', 'lo ', 'world'], { usage: { prompt_tokens: 9, completion_tokens: 3 } }));
    const index = fake.requests.length;
    const input = { session_id: 's-1', chat_history: [{ role: 'user', content: 'hi there' }], user_context: { city: 'Oslo' } };
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, JSON.stringify(input), { headers: { 'x-request-id': 'ws-req-1' } });
    expect(out.frames).toEqual(['Hel', 'lo ', 'world']);
    expect(out.binary).toEqual([false, false, false]);
    expect({ code: out.code, reason: out.reason }).toEqual({ code: 1000, reason: '' });
    expect(out.headers['x-request-id']).toBe('ws-req-1');
    // The input reached the model as on POST /sse: system prompt, user context, then the history.
    const body = fake.requests[index]!.body;
    expect(body).toMatchObject({ model: 'gpt-4o', stream: true });
    expect(JSON.stringify(body.messages)).toContain('hi there');
    expect(JSON.stringify(body.messages)).toContain('city: Oslo');
    expect(fake.requests).toHaveLength(index + 1);
  });

  it('v2alpha1: the same protocol with a multimodal input (items)', async () => {
    fake.script(reply.chunks(['Do', 'ne'], { usage: { prompt_tokens: 2, completion_tokens: 1 } }));
    const input = { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'go' }] }] };
    const out = await streamSocket(`${ws}/HelperV2/0.2/stream`, JSON.stringify(input));
    expect(out.frames).toEqual(['Do', 'ne']);
    expect(out.code).toBe(1000);
  });

  it('accepts the input in a binary frame as well (UTF-8 JSON)', async () => {
    fake.script(reply.chunks(['ok']));
    const out = await streamSocket(`${ws}/HelperV2/0.2/stream`, Buffer.from(hi()));
    expect(out.frames).toEqual(['ok']);
    expect(out.code).toBe(1000);
  });

  it('Sequential: only the last task’s partial texts; earlier tasks send nothing', async () => {
    fake.script(reply.text('Plan for Oslo'), reply.chunks(['Take ', 'a coat']));
    const input = { chat_history: [{ role: 'user', content: 'weather?' }], user_context: { city: 'Oslo' } };
    const out = await streamSocket(`${ws}/Planner/0.1/stream`, JSON.stringify(input));
    expect(out.frames).toEqual(['Take ', 'a coat']);
    expect(out.code).toBe(1000);
  });

  it('pings while the model is slow, and the frames are still only the text', async () => {
    // 1 s of silence against a ping every 150 ms: at least 2 pings even when a busy machine delays timers.
    fake.script(reply.chunks(['late'], { delayMs: 1000 }));
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi());
    expect(out.frames).toEqual(['late']);
    expect(out.pings).toBeGreaterThanOrEqual(2);
    expect(out.code).toBe(1000);
  });

  it.each([
    [
      'a field that fails validation',
      'ChatBot/1.0',
      JSON.stringify({ chat_history: [{ role: 'robot', content: 'x' }] }),
      /^VALIDATION_FAILED: chat_history\.0\.role: /,
    ],
    [
      'an image for a text-only (BaseInput*) agent',
      'Planner/0.1',
      JSON.stringify({ chat_history: [{ role: 'user', items: [{ content_type: 'image', content: 'data:image/png;base64,AAAA' }] }] }),
      /^VALIDATION_FAILED: chat_history\.0\.items\.0\.content_type: BaseInputWithUserContext accepts text items only/,
    ],
    ['a message that is not JSON', 'ChatBot/1.0', 'hello?', /^MALFORMED_JSON: the message is not a JSON document$/],
    ['a JSON value that is not an object', 'HelperV2/0.2', '[1,2]', /^VALIDATION_FAILED: the body must be a JSON object$/],
  ])('closes with 1007 and the error code on %s, without calling the model', async (_name, path, message, reason) => {
    const before = fake.requests.length;
    const out = await streamSocket(`${ws}/${path}/stream`, message);
    expect(out.frames).toEqual([]);
    expect(out.code).toBe(1007);
    expect(out.reason).toMatch(reason);
    expect(Buffer.byteLength(out.reason)).toBeLessThanOrEqual(123);
    expect(fake.requests).toHaveLength(before);
  });

  it('closes with 1009 on a message larger than TA_MAX_BODY_BYTES, and takes one just under it', async () => {
    const before = fake.requests.length;
    const over = hi('a'.repeat(MAX_BODY_BYTES));
    const refused = await streamSocket(`${ws}/ChatBot/1.0/stream`, over);
    expect(refused.frames).toEqual([]);
    expect(refused.code).toBe(1009);
    expect(fake.requests).toHaveLength(before);

    fake.script(reply.chunks(['fits']));
    const under = hi('a'.repeat(MAX_BODY_BYTES - 100));
    expect(Buffer.byteLength(under)).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const accepted = await streamSocket(`${ws}/ChatBot/1.0/stream`, under);
    expect(accepted.frames).toEqual(['fits']);
    expect(accepted.code).toBe(1000);
  });

  it('closes with 1013 on a rate limit and 1011 on a provider failure, the code in the reason', async () => {
    fake.script(reply.error(429, { headers: { 'retry-after': '7' } }));
    const limited = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi());
    expect(limited.code).toBe(1013);
    expect(limited.reason).toMatch(/^LLM_RATE_LIMITED: /);
    expect(limited.frames).toEqual([]);

    fake.script(reply.streamThenFail(['part ']));
    const broken = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi());
    expect(broken.frames).toEqual(['part ']);
    expect(broken.code).toBe(1011);
    expect(broken.reason).toMatch(/^LLM_UNAVAILABLE: /);
  });

  it('aborts the model call when the client leaves mid-stream', async () => {
    fake.script(reply.hang(['first ']));
    const index = fake.requests.length;
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi(), { onFrame: (_frame, socket) => socket.close() });
    expect(out.frames).toEqual(['first ']);
    const call = await fake.waitForRequest(index);
    await call.disconnected; // resolves only when the app dropped its request to the provider
    expect(call.clientDisconnected).toBe(true);
  });

  it('cuts a peer that stops answering pings, which aborts its model call', async () => {
    fake.script(reply.hang());
    const index = fake.requests.length;
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi(), { autoPong: false });
    expect(out.frames).toEqual([]);
    expect(out.code).toBe(1006); // no close frame: the server dropped the connection
    const call = await fake.waitForRequest(index);
    await call.disconnected;
  });

  it('has no /stream for a v3 (tealagents/v1alpha1) agent, nor on unknown paths: 404 before any upgrade', async () => {
    for (const path of ['/Assistant/0.1/stream', '/NoSuchAgent/1.0/stream', '/ChatBot/1.0/sse']) {
      const res = await refusedUpgrade(`${ws}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.text)).toMatchObject({ status: 404, code: 'ROUTE_NOT_FOUND', instance: path });
    }
  });

  it('is not in the agent’s openapi.json, as FastAPI lists no WebSocket route', async () => {
    const doc = (await (await fetch(`${t.url}/ChatBot/1.0/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).some((p) => p.endsWith('/stream'))).toBe(false);
  });

  it('is traced like any request: a SERVER span under the caller’s traceparent, the invocation inside, one log line', async () => {
    fake.script(reply.chunks(['traced']));
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi(), {
      headers: { traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01`, 'x-request-id': 'ws-traced' },
    });
    expect(out.code).toBe(1000);
    expect(out.headers.traceresponse).toMatch(new RegExp(`^00-${CALLER_TRACE_ID}-[0-9a-f]{16}-01$`));

    const line = () => t.logs().find((l) => l.msg === 'request completed' && l.http_request_id === 'ws-traced');
    for (let i = 0; i < 200 && !line(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(line()).toMatchObject({ route: '/ChatBot/1.0/stream', status: 101, close_code: 1000, agent: 'ChatBot:1.0', trace_id: CALLER_TRACE_ID });

    await t.app.get<Telemetry>(TELEMETRY).flush();
    const server = () => receiver.spans().find((s) => s.kind === SPAN_KIND.SERVER && s.attributes['ta.http.request_id'] === 'ws-traced');
    await receiver.waitFor(() => !!server(), 'the SERVER span of the socket');
    const span = server()!;
    expect(span).toMatchObject({ name: 'GET /ChatBot/1.0/stream', traceId: CALLER_TRACE_ID, parentSpanId: CALLER_SPAN_ID });
    expect(span.attributes).toMatchObject({ 'http.route': '/ChatBot/1.0/stream', 'http.response.status_code': 101, 'ta.websocket.close_code': 1000 });
    await receiver.waitFor(
      () => receiver.spans().some((s) => s.parentSpanId === span.spanId && s.name === 'invoke_agent ChatBot:1.0'),
      'invoke_agent under it',
    );
  });
});

describe('WebSocket /stream (Entra ID bearer tokens)', () => {
  let issuer: OidcIssuer;
  let app: FakeModelApp;
  let ws: string;
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    app = await startFakeModelApp({
      agents: {
        'chat.yaml': CHAT_V1,
        // spec.auth replaces the server's required scopes for this agent's routes, the socket included.
        'v2.yaml': `${AGENT_V2}  auth:\n    required_scopes: [helper.stream]\n`,
      },
      // No clock skew: a token is refused from its `exp` on, at the handshake and for input alike.
      env: entraEnv(issuer, { TA_ENTRA_ALLOWED_TENANTS: DEFAULT_TENANT, TA_ENTRA_REQUIRED_ROLES: 'Agents.Invoke', TA_ENTRA_CLOCK_SKEW_SECONDS: '0' }),
    });
    ws = wsUrl(app.t.url);
  });
  afterAll(async () => {
    await app?.close();
    await issuer?.close();
  });

  it.each([
    ['no Authorization header', async () => undefined],
    ['a token that is not a JWT', async () => 'Bearer garbage'],
    ['an expired token', async () => `Bearer ${await issuer.mint({ expiresIn: -600 })}`],
  ])('refuses the upgrade with 401 on %s, before any socket or model call', async (_name, auth) => {
    const before = app.llm.requests.length;
    const authorization = await auth();
    const res = await refusedUpgrade(`${ws}/ChatBot/1.0/stream`, authorization ? { authorization } : {});
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer error="invalid_token"/);
    expect(JSON.parse(res.text)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED', instance: '/ChatBot/1.0/stream' });
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(app.llm.requests).toHaveLength(before);
  });

  it('refuses with 403 a valid token without the scope the agent’s spec.auth requires', async () => {
    const res = await refusedUpgrade(`${ws}/HelperV2/0.2/stream`, { authorization: `Bearer ${await issuer.mint()}` });
    expect(res.status).toBe(403);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer error="insufficient_scope"/);
    expect(JSON.parse(res.text)).toMatchObject({ code: 'FORBIDDEN' });
  });

  it('streams for a valid bearer token', async () => {
    app.llm.script(reply.chunks(['auth', 'orized']));
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, hi(), { headers: { authorization: `Bearer ${await issuer.mint()}` } });
    expect(out.frames).toEqual(['auth', 'orized']);
    expect(out.code).toBe(1000);
    app.llm.script(reply.chunks(['scoped']));
    const scoped = await streamSocket(`${ws}/HelperV2/0.2/stream`, hi(), {
      headers: { authorization: `Bearer ${await issuer.mint({ scp: 'helper.stream' })}` },
    });
    expect(scoped.frames).toEqual(['scoped']);
  });

  // Last in this block: on a server that serves the late input, the scripted reply is used here.
  it('refuses input that arrives after the token’s exp: closes with 1008 UNAUTHENTICATED, nothing served', async () => {
    const token = await issuer.mint({ expiresIn: 3 });
    const expiresAtMs = decodeJwt(token).exp! * 1000;
    app.llm.script(reply.chunks(['served on an expired token']));
    const before = app.llm.requests.length;
    let openedAt = Infinity;
    const out = await streamSocket(`${ws}/ChatBot/1.0/stream`, undefined, {
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'ws-expired' },
      onOpen: (socket) => {
        openedAt = Date.now();
        setTimeout(() => socket.send(hi()), expiresAtMs - openedAt + 250);
      },
    });
    expect(openedAt).toBeLessThan(expiresAtMs); // the handshake itself was in time
    expect({ code: out.code, frames: out.frames }).toEqual({ code: 1008, frames: [] });
    expect(out.reason).toBe('UNAUTHENTICATED: the bearer token expired before the input message came');
    expect(app.llm.requests).toHaveLength(before);
    // Audited as the same token on an HTTP request would be, naming the socket's request and caller.
    const audited = app.t.logs().filter((l) => l.audit === true && l.event === 'auth.failed' && l.http_request_id === 'ws-expired');
    expect(audited).toEqual([expect.objectContaining({ code: 'UNAUTHENTICATED', tid: DEFAULT_TENANT, oid_hash: expect.any(String) })]);
  }, 15_000);
});

describe('WebSocket /stream limits (dev auth)', () => {
  const FIRST_MESSAGE_TIMEOUT_MS = 300;
  const MAX_PER_CALLER = 3;
  /** Long enough that a socket still open then was left open: the test ends it and fails. */
  const GUARD_MS = 4000;
  let app: FakeModelApp;
  let ws: string;
  beforeAll(async () => {
    app = await startFakeModelApp({
      agents: { 'chat.yaml': CHAT_V1 },
      env: {
        TA_WS_FIRST_MESSAGE_MS: String(FIRST_MESSAGE_TIMEOUT_MS),
        TA_WS_MAX_SOCKETS_PER_CALLER: String(MAX_PER_CALLER),
        // Pings every 50 ms, all answered: a live peer that sends nothing must still be closed.
        TA_SSE_KEEPALIVE_MS: '50',
      },
    });
    ws = wsUrl(app.t.url);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** A socket of `user` that sends `message` (or nothing), ended by the test after GUARD_MS at the latest. */
  function open(user: string, message?: string, onOpen?: (socket: WebSocket) => void): Promise<SocketTranscript> {
    return streamSocket(`${ws}/ChatBot/1.0/stream`, message, {
      headers: { 'x-dev-user': user },
      onOpen: (socket) => {
        setTimeout(() => socket.terminate(), GUARD_MS).unref();
        onOpen?.(socket);
      },
    });
  }

  it('closes with 1008 INPUT_TIMEOUT a socket whose input has not come in time, however well it answers pings', async () => {
    const before = app.llm.requests.length;
    const started = Date.now();
    const outs = await Promise.all([open('idle'), open('idle'), open('idle')]);
    for (const out of outs) {
      expect({ code: out.code, frames: out.frames }).toEqual({ code: 1008, frames: [] });
      expect(out.reason).toBe(`INPUT_TIMEOUT: no input message within ${FIRST_MESSAGE_TIMEOUT_MS} ms`);
      expect(out.pings).toBeGreaterThanOrEqual(1);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(FIRST_MESSAGE_TIMEOUT_MS);
    expect(Date.now() - started).toBeLessThan(GUARD_MS);
    expect(app.llm.requests).toHaveLength(before);
  });

  it('caps the open sockets of one caller: one more closes with 1013 TOO_MANY_STREAMS; others are not counted; a close makes room', async () => {
    const index = app.llm.requests.length;
    app.llm.script(reply.hang(), reply.hang(), reply.hang());
    const held: WebSocket[] = [];
    const busy = Array.from({ length: MAX_PER_CALLER }, () => open('alice', hi(), (s) => held.push(s)));
    await app.llm.waitForRequest(index + MAX_PER_CALLER - 1);

    const over = await open('alice', hi());
    expect({ code: over.code, frames: over.frames }).toEqual({ code: 1013, frames: [] });
    expect(over.reason).toBe(`TOO_MANY_STREAMS: at most ${MAX_PER_CALLER} open /stream sockets per caller; retry later`);
    expect(app.llm.requests).toHaveLength(index + MAX_PER_CALLER);

    app.llm.script(reply.chunks(['bob']));
    expect(await open('bob', hi())).toMatchObject({ code: 1000, frames: ['bob'] });

    held[0]!.close();
    await busy[0];
    app.llm.script(reply.chunks(['room']));
    expect(await open('alice', hi())).toMatchObject({ code: 1000, frames: ['room'] });

    for (const s of held) s.close();
    await Promise.all(busy);
  });

  it('gives a caller’s count back on every way a socket ends', async () => {
    app.llm.script(reply.chunks(['done']), reply.hang(['cut ']));
    const ended = await Promise.all([
      open('carol', hi()), // served: 1000
      open('carol', '{"chat_history": 1}'), // refused input: 1007
      open('carol'), // no input: 1008
    ]);
    expect(ended.map((o) => o.code)).toEqual([1000, 1007, 1008]);
    await Promise.all([
      open('carol', undefined, (s) => s.close()), // the client leaves before its input
      open('carol', undefined, (s) => s.terminate()), // the client's connection drops
      open('carol', hi(), (s) => s.on('message', () => s.close())), // the client leaves mid-stream
    ]);
    await app.llm.requests.at(-1)!.disconnected; // the model call of the socket left mid-stream, aborted with it
    // Nothing of carol's is left counted: she holds the cap at once again (each ends by the timeout).
    const again = await Promise.all(Array.from({ length: MAX_PER_CALLER }, () => open('carol')));
    expect(again.map((o) => o.code)).toEqual(Array(MAX_PER_CALLER).fill(1008));
  }, 20_000);
});

describe('WebSocket /stream at shutdown', () => {
  it('closes open sockets with 1001 and aborts their model calls, so the server can stop', async () => {
    const app = await startFakeModelApp({ agents: { 'chat.yaml': CHAT_V1 } });
    try {
      app.llm.script(reply.hang(['first ']));
      let closing: Promise<void> | undefined;
      const out = await streamSocket(`${wsUrl(app.t.url)}/ChatBot/1.0/stream`, hi(), {
        onFrame: () => (closing ??= app.t.close()),
      });
      expect(out.frames).toEqual(['first ']);
      expect({ code: out.code, reason: out.reason }).toEqual({ code: 1001, reason: 'server shutting down' });
      await closing;
      await app.llm.requests[0]!.disconnected;
    } finally {
      await app.llm.close();
    }
  });
});
