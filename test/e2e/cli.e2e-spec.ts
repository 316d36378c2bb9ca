import { createServer, Server, Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { allBrokenProblems } from '../fixtures/config/broken-expected';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { postJson, request } from '../support/http';

/**
 * The installed command, as a user runs it: `node bin/teal-agent-server.js ...` in a child process
 * over the compiled dist/, with its real exit status, stdout and stderr.
 */
const ROOT = resolve(__dirname, '../..');
const FIXTURES = join(ROOT, 'test', 'fixtures', 'config');

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as { port: number };
  await new Promise((ok) => server.close(ok));
  return port;
}

async function isListening(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = new Socket();
    socket.once('connect', () => (socket.destroy(), ok(true)));
    socket.once('error', () => ok(false));
    socket.connect(port, '127.0.0.1');
  });
}

type Run = CliRun;
const cli = runCli;

/** Resolves with the JSON "listening" log line, or rejects with the output if the process exits first. */
const listening = (run: Run, timeoutMs = 20_000) => run.waitForLog((l) => l.msg === 'teal-agent-server listening', { timeoutMs });

const DEV = { TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'info' };
jest.setTimeout(60_000);

beforeAll(ensureBuilt, 150_000);

describe('teal-agent-server serve', () => {
  let run: Run;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    run = cli(['serve', join(FIXTURES, 'cli'), '--port', String(port)], DEV);
    await listening(run);
  });
  afterAll(async () => {
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await run.exited;
  });

  it('logs one JSON "listening" line with the agents, the settings and the start-up time', () => {
    const line = JSON.parse(
      run
        .stdout()
        .split('\n')
        .find((l) => l.includes('listening'))!,
    ) as Record<string, unknown>;
    expect(line).toMatchObject({
      msg: 'teal-agent-server listening',
      port,
      host: '127.0.0.1',
      agents: ['/CliChat/0.1', '/CliEcho/1.0', '/CliState/0.1'],
      state_store: 'memory',
      auth_mode: 'dev',
    });
    expect(line.startup_ms).toEqual(expect.any(Number));
  });

  it('serves every agent of the directory on the requested port', async () => {
    for (const prefix of ['/CliChat/0.1', '/CliEcho/1.0', '/CliState/0.1']) {
      expect([prefix, (await request(`http://127.0.0.1:${port}${prefix}/health`)).status]).toEqual([prefix, 200]);
    }
    const res = await postJson(`http://127.0.0.1:${port}/CliEcho/1.0`, { chat_history: [{ role: 'user', content: 'ping' }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source: 'CliEcho:1.0', output_raw: 'ping' });
  });

  it('stops on SIGTERM, drained (exit 0), and frees the port', async () => {
    run.child.kill('SIGTERM');
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(await isListening(port)).toBe(false);
  });
});

describe('teal-agent-server serve: a SIGTERM the moment it says it listens', () => {
  // Whatever waits for the "listening" line (a supervisor, a test) may signal at once: the
  // handlers are in place before the line is written, so the server drains and exits 0 rather
  // than being killed by the signal's default action.
  it('is a drained shutdown (exit 0), not a kill', async () => {
    const port = await freePort();
    const run = cli(['serve', join(FIXTURES, 'cli', 'echo.v2alpha1.yaml'), '--port', String(port)], DEV);
    run.child.stdout!.on('data', (chunk: Buffer) => {
      if (String(chunk).includes('teal-agent-server listening')) run.child.kill('SIGTERM');
    });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.logs().map((l) => l.msg)).toEqual(expect.arrayContaining(['teal-agent-server listening', 'shutdown requested']));
  });
});

describe('teal-agent-server: command line', () => {
  it.each([[['--help']], [['-h']], [['serve', '--help']]])('%j prints the usage on stdout and exits 0', async (args) => {
    const run = cli(args);
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.stdout()).toMatch(/^Usage:\n {2}teal-agent-server serve \[<config path>\] \[--port <n>\]/);
    expect(run.stdout()).toContain('docs/configuration.md');
    expect(run.stderr()).toBe('');
  });

  it('--version prints the package version', async () => {
    const run = cli(['--version']);
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(run.stdout()).toBe(`${(require(join(ROOT, 'package.json')) as { version: string }).version}\n`);
  });

  it.each([
    [['deploy'], 'unknown command "deploy"'],
    [['serve', 'a', 'b'], 'unexpected argument "b" (serve takes one config path)'],
    [['serve', 'x', '--verbose'], 'unknown option "--verbose"'],
    [['serve', 'x', '--port', 'http'], '--port must be an integer from 0 to 65535 (got http)'],
    [['serve', 'x', '--port=70000'], '--port must be an integer from 0 to 65535 (got 70000)'],
    [['serve'], 'serve needs a config path: give one, or set TA_SERVICE_CONFIG'],
  ])('%j exits 2 with "%s" on stderr', async (args, message) => {
    const run = cli(args, DEV);
    expect(await run.exited).toEqual({ code: 2, signal: null });
    expect(run.stderr()).toBe(`teal-agent-server: ${message}\nRun "teal-agent-server --help" for usage.\n`);
    expect(run.stdout()).toBe('');
  });

  it('serves TA_SERVICE_CONFIG when no path is given', async () => {
    const port = await freePort();
    const run = cli(['serve', '--port', String(port)], { ...DEV, TA_SERVICE_CONFIG: join(FIXTURES, 'cli', 'echo.v2alpha1.yaml') });
    expect((await listening(run)).agents).toEqual(['/CliEcho/1.0']);
    run.child.kill('SIGTERM');
    await run.exited;
  });
});

describe('teal-agent-server: a configuration that cannot be served', () => {
  it('exits 1 with every problem of every broken file on stderr, and never listens', async () => {
    const port = await freePort();
    const dir = join(FIXTURES, 'broken');
    const run = cli(['serve', dir, '--port', String(port)], DEV);
    const problems = allBrokenProblems(dir);
    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.stderr()).toBe(`Invalid agent configuration (${problems.length} problems):\n${problems.map((p) => `  - ${p}\n`).join('')}`);
    expect(run.stdout()).not.toContain('listening');
    expect(await isListening(port)).toBe(false);
  });

  it("reports the agents' problems, not the store its boot began connecting to meanwhile (unreachable here)", async () => {
    const dir = join(FIXTURES, 'broken');
    const problems = allBrokenProblems(dir);
    const started = Date.now();
    // Nothing listens on port 9: the store's connection, begun before the agents are read, fails too.
    const run = cli(['serve', dir, '--port', '0'], { ...DEV, TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: 'postgres://ta@127.0.0.1:9/ta' });
    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.stderr()).toBe(`Invalid agent configuration (${problems.length} problems):\n${problems.map((p) => `  - ${p}\n`).join('')}`);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('reports environment and agent problems together', async () => {
    const dir = join(FIXTURES, 'broken', 'duplicate-prefix');
    const run = cli(['serve', dir], { ...DEV, TA_PORT: 'abc', TA_STATE_STORE: 'redis' });
    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.stderr()).toBe(
      [
        'Invalid environment (2 problems):',
        '  - TA_PORT must be an integer from 0 to 65535 (got "abc")',
        '  - TA_REDIS_URL is required when TA_STATE_STORE=redis (a redis:// or rediss:// URL)',
        'Invalid agent configuration (2 problems):',
        `  - ${dir}/b-same-prefix.yaml:3: name: the prefix /MathAgent/0.1 is already served by ${dir}/a-first.yaml`,
        `  - ${dir}/c-same-prefix-other-case.yaml:4: service_name: the prefix /mathagent/0.1 collides with /MathAgent/0.1 of ${dir}/a-first.yaml (URL paths are matched case-insensitively)`,
        '',
      ].join('\n'),
    );
  });

  it('exits 1 with one plain line when the port is taken', async () => {
    const taken: Server = createServer();
    await new Promise<void>((ok) => taken.listen(0, '127.0.0.1', ok));
    const { port } = taken.address() as { port: number };
    try {
      const run = cli(['serve', join(FIXTURES, 'cli'), '--port', String(port)], DEV);
      expect(await run.exited).toEqual({ code: 1, signal: null });
      expect(run.stderr()).toBe(`teal-agent-server cannot listen on 127.0.0.1:${port}: the address is already in use (choose another TA_PORT or --port)\n`);
    } finally {
      await new Promise((ok) => taken.close(ok));
    }
  });

  // A backend the boot must use (TA_DYNAMODB_CREATE_TABLE) but cannot: one plain line, no stack.
  const DYNAMO = {
    ...DEV,
    HOME: join(ROOT, 'test', 'fixtures', 'no-such-home'), // no ~/.aws
    AWS_EC2_METADATA_DISABLED: 'true',
    TA_STATE_STORE: 'dynamodb',
    TA_DYNAMODB_TABLE: 'cli-boot-table',
    AWS_REGION: 'eu-west-1',
    TA_DYNAMODB_CREATE_TABLE: 'true',
  };
  it.each<[string, Record<string, string>, string]>([
    [
      'DynamoDB without credentials',
      {},
      'teal-agent-server cannot start: DynamoDB: no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an IAM role)\n',
    ],
    [
      'DynamoDB with nothing listening at its endpoint',
      { TA_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' },
      'teal-agent-server cannot start: DynamoDB is unreachable at TA_DYNAMODB_ENDPOINT=http://127.0.0.1:9 (ECONNREFUSED)\n',
    ],
  ])('exits 1 with one plain line naming what is missing: %s', async (_name, env, line) => {
    const run = cli(['serve', join(FIXTURES, 'cli'), '--port', '0'], { ...DYNAMO, ...env });
    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.stderr()).toBe(line);
  });
});
