/**
 * SIGTERM during 20 running v3 requests (issue 13, point 10). The server is the real CLI process
 * (`dist/cli.js serve`) on its own redis-server, with TA_SHUTDOWN_GRACE_MS=5000 and a lease far
 * longer than the test (60 s), so only an explicit release can free a task in time:
 * - readiness turns 503 at once, new connections are refused, and a request arriving on a
 *   kept-alive connection gets 503 SHUTTING_DOWN with `Connection: close`;
 * - the 12 requests whose model answers within the grace complete (200, stored Completed);
 * - the 8 that are still running when it ends fail: JSON callers get 503 SHUTTING_DOWN, SSE streams
 *   end with an `error` frame, and each is stored Failed with reason `shutdown`;
 * - a v1 call and a v1 stream still running then end with SHUTTING_DOWN too;
 * - a follow-on queued behind one of them stays in the store with the lease free: its stream on the
 *   dying replica ends with SHUTTING_DOWN, and a second replica takes it over and completes it;
 * - the process exits 0, about one grace after the signal.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, Socket } from 'node:net';
import { join } from 'node:path';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { JsonResponse, request } from '../support/http';
import { freePort, RedisServerHandle, startRedisServer } from '../support/services';
import { getSse, openSse, parseSse, SseEvent, SseReader } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { CHAT_V1 } from '../support/stateless-agents';
import { v3Agent } from '../support/v3-agents';
import { text, v3Client } from '../support/v3-client';

const AGENT = v3Agent('Drain', { description: 'Agent whose requests meet a shutdown', systemPrompt: null, concurrency: { on_busy: 'enqueue' } });
const ROOT = join(__dirname, '..', '..');
const GRACE_MS = 5000;
const SHORT = 12;
const LONG = 8;

/** A request whose head is sent now and whose end is sent later, on one kept-alive connection. */
function heldRequest(port: number, head: string): { finish: (rest: string) => Promise<string> } {
  const socket: Socket = connect(port, '127.0.0.1');
  let received = '';
  const closed = new Promise<string>((resolve) => {
    socket.on('data', (c: Buffer) => (received += c.toString('utf8')));
    socket.on('close', () => resolve(received));
    socket.on('error', () => undefined);
  });
  socket.write(head);
  return {
    finish: (rest) => {
      socket.write(rest);
      return closed;
    },
  };
}

/** A request that may fail (a dropped connection) without an unhandled rejection before it is awaited. */
const settled = (p: Promise<JsonResponse>) => p.catch((err: Error) => ({ status: 0, headers: new Headers(), body: undefined, text: String(err) }));

/** `p`, or a failure naming `what` when it takes longer than the grace plus a margin (today's main hangs). */
function inTime<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still pending ${GRACE_MS + 8000} ms later`)), GRACE_MS + 8000)),
  );
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const lastEvent = (events: SseEvent[]) => events.filter((e) => e.event).at(-1)!;

describe('SIGTERM during 20 running requests', () => {
  let redis: RedisServerHandle;
  let llm: FakeOpenAi;
  let child: ChildProcess | undefined;
  let b: TestApp | undefined;

  beforeAll(async () => {
    redis = await startRedisServer();
    llm = await startFakeOpenAi();
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await b?.close();
    await llm?.close();
    await redis?.stop();
  });

  it('finishes what fits in the grace, fails the rest as shutdown, hands the queue over and exits 0', async () => {
    const cli = join(ROOT, 'dist', 'cli.js');
    expect(existsSync(cli)).toBe(true); // built by scripts/test.sh (npx tsc -p tsconfig.build.json)
    const dir = writeAgentDir({ 'drain.yaml': AGENT, 'chat.yaml': CHAT_V1 });
    const port = await freePort();
    const common = {
      TA_AUTH_MODE: 'dev',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: redis.url,
      TA_TASK_LEASE_MS: '60000',
    };
    let output = '';
    child = spawn(process.execPath, [cli, 'serve', dir, '--port', String(port)], {
      env: { PATH: process.env.PATH ?? '', TA_HOST: '127.0.0.1', TA_LOG_LEVEL: 'info', TA_SHUTDOWN_GRACE_MS: String(GRACE_MS), ...common },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
      child!.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
    );
    const base = `http://127.0.0.1:${port}/Drain/1`;
    for (let i = 0; i < 200; i++) {
      if ((await request(`${base}/health/live`).catch(() => undefined))?.status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const a = v3Client(base);

    // Replies go by arrival: the first 12 requests answer within the grace, the last 8 never do.
    llm.script(
      ...Array.from({ length: SHORT }, () => reply.text('quick answer', { delayMs: 3500 })),
      ...Array.from({ length: LONG }, () => reply.hang(['thinking'])),
    );
    const short = Array.from({ length: SHORT }, (_, i) => settled(a.say(`short ${i}`)));
    await llm.waitForRequest(SHORT - 1);
    const longJson = Array.from({ length: LONG / 2 }, (_, i) => settled(a.say(`long ${i}`)));
    const longSse: SseReader[] = await Promise.all(Array.from({ length: LONG / 2 }, (_, i) => openSse(`${base}/sse`, { items: [text(`long sse ${i}`)] })));
    await llm.waitForRequest(SHORT + LONG - 1);
    // And a v1 call and stream, also past the grace.
    llm.script(reply.hang(), reply.hang(['thinking']));
    const v1 = `http://127.0.0.1:${port}/ChatBot/1.0`;
    const v1Json = settled(request(v1, { body: { chat_history: [{ role: 'user', content: 'hi' }] } }));
    await llm.waitForRequest(SHORT + LONG);
    const v1Sse = await openSse(`${v1}/sse`, { chat_history: [{ role: 'user', content: 'hi' }] });
    await llm.waitForRequest(SHORT + LONG + 1);
    // The first long SSE request's task gets a follow-on, queued behind it (on_busy: enqueue).
    const firstEvents = await longSse[0]!.readUntil((t) => t.includes('event: partial-response'));
    const queuedTaskId = JSON.parse(parseSse(firstEvents).find((e) => e.event === 'partial-response')!.data).task_id as string;
    const queued = await openSse(`${base}/sse`, { task_id: queuedTaskId, items: [text('queued behind a long one')] });
    await queued.readUntil((t) => t.includes('event: queued'));

    // Requests already on kept-alive connections when the drain starts.
    const readiness = heldRequest(port, 'GET /health/ready HTTP/1.1\r\nHost: x\r\n');
    const agentReadiness = heldRequest(port, 'GET /Drain/1/health/ready HTTP/1.1\r\nHost: x\r\n');
    const lateInvoke = heldRequest(port, `POST /Drain/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n`);
    await new Promise((r) => setTimeout(r, 200));

    const signaled = Date.now();
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));

    // Draining: no new connection, readiness 503, a request on an open connection 503 + close.
    await expect(request(`${base}/health/live`)).rejects.toThrow();
    const ready = await readiness.finish('\r\n');
    expect(ready).toMatch(/^HTTP\/1\.1 503/);
    expect(ready).toContain('"name":"shutdown"');
    expect(ready).toMatch(/\r\nconnection: close\r\n/i);
    const agentReady = await agentReadiness.finish('\r\n');
    expect(agentReady).toMatch(/^HTTP\/1\.1 503/);
    expect(agentReady).toContain('"shutdown":{"status":"down"');
    const body = JSON.stringify({ items: [text('too late')] });
    const late = await lateInvoke.finish(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    expect(late).toMatch(/^HTTP\/1\.1 503/);
    expect(late).toMatch(/\r\nconnection: close\r\n/i);
    expect(late).toContain('"code":"SHUTTING_DOWN"');

    // Within the grace: answered and stored.
    const shortDone: JsonResponse[] = await Promise.all(short);
    expect(shortDone.map((r) => [r.status, r.body?.status, r.body?.content?.output])).toEqual(
      Array.from({ length: SHORT }, () => [200, 'Completed', 'quick answer']),
    );

    // Past it: failed as shutdown.
    const longJsonDone: JsonResponse[] = await inTime(Promise.all(longJson), 'the long JSON requests ending');
    for (const r of longJsonDone) {
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ code: 'SHUTTING_DOWN', reason: 'shutdown' });
      expect(r.body.task_id).toEqual(expect.any(String));
    }
    const sseEnds = await inTime(Promise.all(longSse.map(async (s) => lastEvent(parseSse(await s.readAll())))), 'the long streams ending');
    for (const e of sseEnds) {
      expect(e.event).toBe('error');
      expect(JSON.parse(e.data)).toMatchObject({
        code: 'SHUTTING_DOWN',
        status: 503,
        reason: 'shutdown',
        task_id: expect.any(String),
        request_id: expect.any(String),
      });
    }
    const v1Done = await inTime(v1Json, 'the v1 call ending');
    expect([v1Done.status, v1Done.body?.code]).toEqual([503, 'SHUTTING_DOWN']);
    const v1End = lastEvent(parseSse(await inTime(v1Sse.readAll(), 'the v1 stream ending')));
    expect(v1End.event).toBe('error');
    expect(JSON.parse(v1End.data)).toMatchObject({ code: 'SHUTTING_DOWN' });
    const queuedEnd = lastEvent(parseSse(await inTime(queued.readAll(), 'the queued stream ending')));
    expect(queuedEnd.event).toBe('error');
    expect(JSON.parse(queuedEnd.data)).toMatchObject({ code: 'SHUTTING_DOWN' });

    const exit = await inTime(exited, 'the process exiting');
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    const took = exit.at - signaled;
    expect(took).toBeGreaterThanOrEqual(GRACE_MS - 100);
    expect(took).toBeLessThan(GRACE_MS + 3000);
    expect(output).toContain('shutdown grace over');

    // A second replica on the same store: every outcome is there, and it takes the queue over at once
    // (the lease, 60 s long, was released by the dying replica rather than left to lapse).
    b = await startTestApp({ configPath: dir, env: common });
    const bClient = v3Client(`${b.url}/Drain/1`);
    const tasksOf = async (ids: string[]) => Promise.all(ids.map(async (id) => (await bClient.task(id)).body));
    for (const t of await tasksOf(shortDone.map((r) => r.body.task_id))) {
      expect(t.requests.map((r: { status: string }) => r.status)).toEqual(['Completed']);
    }
    for (const t of await tasksOf(longJsonDone.map((r) => r.body.task_id))) {
      expect(t.requests.map((r: { status: string; reason: string | null; error?: { code: string } }) => [r.status, r.reason, r.error?.code])).toEqual([
        ['Failed', 'shutdown', 'SHUTTING_DOWN'],
      ]);
    }
    llm.discard();
    llm.script(reply.text('taken over'));
    const started = Date.now();
    const takeOver = await getSse(`${b.url}/Drain/1/tasks/${queuedTaskId}/stream`);
    const final = lastEvent(parseSse(await takeOver.readAll()));
    expect(final.event).toBe('final-response');
    expect(JSON.parse(final.data)).toMatchObject({ status: 'Completed', content: { output: 'taken over' } });
    expect(Date.now() - started).toBeLessThan(5000);
    const handed = (await bClient.task(queuedTaskId)).body;
    expect(handed.requests.map((r: { status: string; reason: string | null }) => [r.status, r.reason])).toEqual([
      ['Failed', 'shutdown'],
      ['Completed', null],
    ]);
  }, 60_000);
});
