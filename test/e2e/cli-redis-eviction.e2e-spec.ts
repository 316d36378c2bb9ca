import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RedisServerHandle, startRedisServer } from '../support/services';

/**
 * The Redis eviction check at boot, through the installed command over dist/: an `allkeys-*`
 * maxmemory-policy (which can silently drop part of a task) refuses a production boot with one
 * plain line, and only warns otherwise; `noeviction` says nothing.
 */
const ROOT = resolve(__dirname, '../..');
const BIN = join(ROOT, 'bin', 'teal-agent-server.js');
const AGENTS = join(ROOT, 'test', 'fixtures', 'config', 'cli');

/** dist/ is what the bin runs: rebuild it when any source is newer (as cli.e2e-spec.ts does). */
function ensureBuilt(): void {
  const newest = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(dir, { withFileTypes: true }).map((e) =>
        e.isDirectory() ? newest(join(dir, e.name)) : e.name.endsWith('.spec.ts') ? 0 : statSync(join(dir, e.name)).mtimeMs,
      ),
    );
  const built = statSync(join(ROOT, 'dist', 'cli.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (built >= newest(join(ROOT, 'src'))) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  } catch {
    // tsc still emits when another file has a type error; the tests below judge the result.
  }
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function cli(env: Record<string, string>): Run {
  const child = spawn(process.execPath, [BIN, 'serve', AGENTS, '--port', '0'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TA_HOST: '127.0.0.1', TA_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c) => (out += String(c)));
  child.stderr!.on('data', (c) => (err += String(c)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Resolves once the "listening" line is logged; rejects with the output if the process exits first. */
function listening(run: Run, timeoutMs = 20_000): Promise<void> {
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`not listening after ${timeoutMs} ms:\n${run.stdout()}\n${run.stderr()}`)), timeoutMs);
    const check = () => {
      if (run.stdout().includes('"teal-agent-server listening"')) (clearTimeout(timer), ok());
    };
    run.child.stdout!.on('data', check);
    void run.exited.then(({ code }) => (clearTimeout(timer), fail(new Error(`exited ${code}:\n${run.stdout()}\n${run.stderr()}`))));
  });
}

async function stop(run: Run): Promise<void> {
  if (run.child.exitCode === null) run.child.kill('SIGKILL');
  await run.exited;
}

/** Entra settings (never contacted at boot): production refuses dev auth. */
const PRODUCTION = {
  NODE_ENV: 'production',
  TA_AUTH_MODE: 'entra',
  TA_ENTRA_AUTHORITY: 'http://127.0.0.1:9',
  TA_ENTRA_TENANT_ID: 'c0ffee00-0000-4000-8000-00000000000a',
  TA_ENTRA_AUDIENCE: 'api://teal-agent-server',
  TA_ENTRA_REQUIRED_SCOPES: 'agents.invoke',
};
const DEV = { TA_AUTH_MODE: 'dev' };
const WARNING = /Redis maxmemory-policy is allkeys-lru/;

jest.setTimeout(60_000);
beforeAll(ensureBuilt, 150_000);

describe('Redis maxmemory-policy allkeys-lru', () => {
  let redis: RedisServerHandle;
  beforeAll(async () => {
    redis = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'] });
  });
  afterAll(() => redis?.stop());

  it('refuses to start with NODE_ENV=production: exit 1, one plain line naming the setting and the policies to use', async () => {
    const run = cli({ ...PRODUCTION, TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url });
    expect(await run.exited).toEqual({ code: 1, signal: null });
    expect(run.stderr()).toBe(
      'teal-agent-server cannot start: Redis maxmemory-policy is allkeys-lru, which can silently drop part of a task when memory runs out: ' +
        'set maxmemory-policy to noeviction (or a volatile-* policy, which evicts only keys with a TTL) (refused because NODE_ENV=production)\n',
    );
    expect(run.stdout()).not.toContain('listening');
  });

  it('with NODE_ENV unset: logs a warning naming the setting, then starts', async () => {
    const run = cli({ ...DEV, TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url });
    try {
      await listening(run);
      const warning = run
        .stdout()
        .split('\n')
        .find((l) => WARNING.test(l));
      expect(warning).toBeDefined();
      expect(JSON.parse(warning!)).toMatchObject({ level: 'warn' });
      expect(warning).toMatch(/noeviction/);
      expect(warning).toMatch(/volatile-\*/);
    } finally {
      await stop(run);
    }
  });
});

describe('Redis maxmemory-policy noeviction', () => {
  let redis: RedisServerHandle;
  beforeAll(async () => {
    redis = await startRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
  });
  afterAll(() => redis?.stop());

  it.each([
    ['NODE_ENV=production', PRODUCTION],
    ['NODE_ENV unset', DEV],
  ])('starts without a warning (%s)', async (_name, env) => {
    const run = cli({ ...env, TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url });
    try {
      await listening(run);
      expect(run.stdout()).not.toMatch(/maxmemory-policy/);
      expect(run.stderr()).toBe('');
    } finally {
      await stop(run);
    }
  });
});

describe('CONFIG refused (renamed away, as managed Redis does)', () => {
  let redis: RedisServerHandle;
  beforeAll(async () => {
    redis = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', ''] });
  });
  afterAll(() => redis?.stop());

  it('starts even in production, warning that the policy could not be checked', async () => {
    const run = cli({ ...PRODUCTION, TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url });
    try {
      await listening(run);
      expect(run.stdout()).toMatch(/Redis maxmemory-policy could not be checked \(CONFIG GET was refused: ERR unknown command/);
      expect(run.stdout()).toMatch(/make sure it is noeviction or volatile-\*/);
    } finally {
      await stop(run);
    }
  });
});

describe('Redis unreachable at boot', () => {
  it('starts anyway (requests get 503 until it answers), warning that the policy could not be checked', async () => {
    const run = cli({ ...PRODUCTION, TA_STATE_STORE: 'redis', TA_REDIS_URL: 'redis://127.0.0.1:9' });
    try {
      await listening(run);
      expect(run.stdout()).toMatch(/Redis maxmemory-policy could not be checked \(Redis is unreachable\)/);
    } finally {
      await stop(run);
    }
  });
});
