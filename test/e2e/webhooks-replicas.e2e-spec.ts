/**
 * Webhooks over replicas that die (issue 24, items 2–4), on each shared store: Redis, DynamoDB
 * Local and PostgreSQL, two real server processes each. A background run's webhook arrives signed
 * (verified with the `standardwebhooks` verifier); a replica killed with SIGKILL while its delivery
 * is under way (after the commit that wrote it) leaves it to the other replica, which sends it with
 * the same `webhook-id` once the claim lapses; a replica killed while running a background run
 * leaves the request `Failed` (`abandoned`), closed by the other replica's lease sweep, and a
 * `request.failed` webhook says so. Only the model vendor is fake.
 */
import { randomBytes } from 'node:crypto';
import { createServer, IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { postgresStores } from '../support/postgres-stores';
import { createTestStateTable, dynamoDbServerEnv, RedisServerHandle, startRedisServer, testDynamoDbEndpoint, uniqueName } from '../support/services';
import { writeAgentDir } from '../support/test-app';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const LEASE_MS = 1000;
/**
 * An attempt's deadline: its claim is 3 times it plus 1 s (4 s), after which another replica takes
 * it. Long enough that a loaded machine's attempt to a receiver that answers at once is not cut off
 * (which would count it failed and send it again).
 */
const WEBHOOK_TIMEOUT_MS = 1000;

interface Backend {
  name: string;
  start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'Redis',
    async start() {
      const redis: RedisServerHandle = await startRedisServer();
      return { env: { TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url }, stop: () => redis.stop() };
    },
  },
  {
    name: 'DynamoDB Local',
    async start() {
      const table = uniqueName('webhooks');
      const endpoint = testDynamoDbEndpoint();
      await createTestStateTable(table);
      const env = dynamoDbServerEnv(table, endpoint);
      return { env, stop: async () => undefined };
    },
  },
  {
    name: 'PostgreSQL',
    async start() {
      return { env: (await postgresStores('webhooks')).env, stop: async () => undefined };
    },
  },
];

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: { type: string; data: Record<string, unknown> };
}

const agent = (hook: string) => `
apiVersion: tealagents/v1alpha1
name: Hooked
version: 1
description: Reports its requests
spec:
  webhooks:
    - url: ${hook}
      secret_env: HOOK_SECRET
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;

describe.each(BACKENDS)('webhooks over $name, two replicas', (backend) => {
  let llm: FakeOpenAi;
  let backing: Awaited<ReturnType<Backend['start']>>;
  let server: Server;
  let hook: string;
  const received: Received[] = [];
  /** Decides each answer; `hold` keeps the response open (an attempt under way). */
  let answer: (r: Received, res: ServerResponse) => void = (_r, res) => void res.writeHead(204).end();
  const replicas: CliRun[] = [];
  const of = (type: string, requestId: string) => received.filter((r) => r.json.type === type && r.json.data.request_id === requestId);

  beforeAll(async () => {
    ensureBuilt();
    llm = await startFakeOpenAi();
    backing = await backend.start();
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const r = { headers: req.headers, body, json: JSON.parse(body) };
        received.push(r);
        answer(r, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }, 60_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await backing?.stop();
    await llm?.close();
  });

  async function replica(): Promise<{ run: CliRun; base: string }> {
    const dir = writeAgentDir({ 'hooked.yaml': agent(hook) });
    const run = runCli(['serve', dir, '--port', '0'], {
      TA_AUTH_MODE: 'dev',
      TA_LOG_LEVEL: 'info',
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_TASK_LEASE_MS: String(LEASE_MS),
      TA_LEASE_SWEEP_MS: '200',
      TA_WEBHOOK_ALLOW_PRIVATE: 'true',
      TA_WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      HOOK_SECRET: SECRET,
      ...backing.env,
    });
    replicas.push(run);
    return { run, base: `http://127.0.0.1:${await run.listening()}/Hooked/1` };
  }

  const background = (base: string, content: string) =>
    request(base, { method: 'POST', body: { items: [{ content_type: 'text', content }] }, headers: { prefer: 'respond-async' } });

  it('a background run completes and its webhook arrives signed; a replica killed while delivering it leaves it to the other, same webhook-id', async () => {
    const [a, b] = [await replica(), await replica()];
    llm.script(reply.text('signed and sent'));
    const first = await background(a.base, 'one');
    expect(first.status).toBe(202);
    await waitFor(async () => expect(of('request.completed', first.body.request_id).length).toBeGreaterThanOrEqual(1));
    const [signed] = of('request.completed', first.body.request_id);
    expect(new Webhook(SECRET).verify(signed!.body, signed!.headers as Record<string, string>)).toMatchObject({
      type: 'request.completed',
      data: { task_id: first.body.task_id, session_id: first.body.session_id, request_id: first.body.request_id, output: 'signed and sent' },
    });

    // The next delivery's first attempt hangs at the receiver, and its replica is killed meanwhile.
    let held: ServerResponse | undefined;
    answer = (_r, res) => {
      if (!held) {
        held = res;
        a.run.child.kill('SIGKILL');
        return;
      }
      res.writeHead(204).end();
    };
    llm.script(reply.text('delivered by the survivor'));
    const second = await background(a.base, 'two');
    expect(second.status).toBe(202);
    // At least once: the held attempt, then the survivor's (a retry past it, same id, is allowed).
    await waitFor(async () => expect(of('request.completed', second.body.request_id).length).toBeGreaterThanOrEqual(2), 15_000);
    const attempts = of('request.completed', second.body.request_id);
    expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(attempts[1]!.json.data).toMatchObject({ output: 'delivered by the survivor' });
    held?.destroy();
    expect((await request(`${b.base}/tasks/${second.body.task_id}`)).body.status).toBe('Completed');
  }, 45_000);

  it('a replica killed while running a background run leaves the request Failed (abandoned), and a request.failed webhook says so, also to a receiver down at first', async () => {
    // The receiver is down for the first attempt (503, Retry-After: 1), then up: the retry brings it, with the same webhook-id.
    let down = true;
    answer = (_r, res) => {
      res.writeHead(down ? 503 : 204, down ? { 'retry-after': '1' } : {}).end();
      down = false;
    };
    // The survivor of the first case is still up to sweep; only the doomed replica is new.
    const a = await replica();
    llm.script(reply.hang());
    const before = llm.requests.length;
    const run = await background(a.base, 'dies with its replica');
    expect(run.status).toBe(202);
    await llm.waitForRequest(before);
    a.run.child.kill('SIGKILL');
    await waitFor(async () => expect(of('request.failed', run.body.request_id).length).toBeGreaterThanOrEqual(2), 15_000);
    const attempts = of('request.failed', run.body.request_id);
    expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(attempts[1]!.json.data).toMatchObject({
      task_id: run.body.task_id,
      status: 'Failed',
      reason: 'abandoned',
      error: { code: 'ABANDONED' },
    });
  }, 45_000);
});
