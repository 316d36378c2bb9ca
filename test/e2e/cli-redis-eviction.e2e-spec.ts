import { join, resolve } from 'node:path';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { entraEnv } from '../support/oidc-issuer';
import { RedisServerHandle, startRedisServer } from '../support/services';

/**
 * The Redis eviction check at boot, through the installed command over dist/: an `allkeys-*`
 * maxmemory-policy (which can silently drop part of a task) refuses a production boot with one
 * plain line, and only warns otherwise; `noeviction` says nothing.
 */
const ROOT = resolve(__dirname, '../..');
const AGENTS = join(ROOT, 'test', 'fixtures', 'config', 'cli');

const cli = (env: Record<string, string>): CliRun => runCli(['serve', AGENTS, '--port', '0'], { TA_LOG_LEVEL: 'info', ...env });

/** Entra settings (never contacted at boot): production refuses dev auth. */
const PRODUCTION = { NODE_ENV: 'production', ...entraEnv('http://127.0.0.1:9') };
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
      await run.listening();
      const warning = run
        .stdout()
        .split('\n')
        .find((l) => WARNING.test(l));
      expect(warning).toBeDefined();
      expect(JSON.parse(warning!)).toMatchObject({ level: 'warn' });
      expect(warning).toMatch(/noeviction/);
      expect(warning).toMatch(/volatile-\*/);
    } finally {
      await run.stop();
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
      await run.listening();
      expect(run.stdout()).not.toMatch(/maxmemory-policy/);
      expect(run.stderr()).toBe('');
    } finally {
      await run.stop();
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
      await run.listening();
      expect(run.stdout()).toMatch(/Redis maxmemory-policy could not be checked \(CONFIG GET was refused: ERR unknown command/);
      expect(run.stdout()).toMatch(/make sure it is noeviction or volatile-\*/);
    } finally {
      await run.stop();
    }
  });
});

describe('Redis unreachable at boot', () => {
  it('starts anyway (requests get 503 until it answers), warning that the policy could not be checked', async () => {
    const run = cli({ ...PRODUCTION, TA_STATE_STORE: 'redis', TA_REDIS_URL: 'redis://127.0.0.1:9' });
    try {
      await run.listening();
      expect(run.stdout()).toMatch(/Redis maxmemory-policy could not be checked \(Redis is unreachable\)/);
    } finally {
      await run.stop();
    }
  });
});
