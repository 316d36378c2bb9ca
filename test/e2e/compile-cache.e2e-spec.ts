import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMPILE_CACHE_FLUSH_DELAY_MS } from '../../src/boot-compile-cache';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { request } from '../support/http';

/**
 * Node's on-disk compile cache (src/boot-compile-cache.ts, issue 14): off by default, on with the
 * operator's NODE_COMPILE_CACHE, and then written soon after listening: real server processes, each
 * with its own temporary directories (TMPDIR, NODE_COMPILE_CACHE), so nothing is shared with other runs.
 * Whether the cache is read is Node's own account of it (NODE_DEBUG_NATIVE=COMPILE_CACHE prints
 * each module's cache hit on stderr). Structure only, no timings: how much faster is the
 * benchmark's to say (scripts/measure-startup.sh).
 */
const ROOT = resolve(__dirname, '../..');
/** The benchmark's agent (a model on TA_BASE_URL, no tools): nothing is called at boot. */
const AGENTS = join(ROOT, 'bench', 'agents');
const ENV = { TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'info', TA_BASE_URL: 'http://127.0.0.1:9/v1', TA_API_KEY: 'x' };
/** Far fewer than the ~1,700 modules of this boot, far more than the bin and the CLI alone. */
const MANY = 100;

const runs: CliRun[] = [];
const dirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-compile-cache-'));
  dirs.push(dir);
  return dir;
}

/** The cache entries under `dir` (Node keeps them in one subdirectory per Node version). */
function entries(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/**
 * Waits until `dir` holds at least `atLeast` entries and no more are coming: the server writes them
 * all at once, COMPILE_CACHE_FLUSH_DELAY_MS after listening, in one turn of its event loop, so once
 * the server at `base` answers again after they appeared, the write is over (a count that only held
 * still for a moment could be a busy machine pausing the writer).
 */
async function awaitEntries(dir: string, atLeast: number, base: string): Promise<string[]> {
  const deadline = Date.now() + COMPILE_CACHE_FLUSH_DELAY_MS + 10_000;
  let seen = -1;
  while (Date.now() < deadline && (entries(dir).length < atLeast || entries(dir).length !== seen)) {
    seen = entries(dir).length;
    await sleep(250);
  }
  expect((await request(`${base}/health/live`)).status).toBe(200);
  return entries(dir);
}

/** Boots a server on a free port and waits until it listens; returns the run and its base URL. */
async function boot(env: Record<string, string>, entry: 'bin' | 'dist' = 'bin'): Promise<{ run: CliRun; base: string }> {
  const run = runCli(['serve', AGENTS, '--port', '0'], { ...ENV, ...env }, { entry });
  runs.push(run);
  return { run, base: `http://127.0.0.1:${await run.listening()}` };
}

/**
 * Stops the server as an operator does (SIGTERM, a drained exit), so that Node's own write at exit
 * happens too. Once it has answered a request: the boot installs its SIGTERM handler just after the
 * "listening" line, in the same turn of its event loop, and a signal that came first would stop it
 * at once (seen with NODE_DEBUG_NATIVE, whose lines can hold the boot up on a full stderr pipe).
 */
async function stopGracefully({ run, base }: { run: CliRun; base: string }): Promise<void> {
  expect((await request(`${base}/health/live`)).status).toBe(200);
  run.child.kill('SIGTERM');
  expect(await run.exited).toEqual({ code: 0, signal: null });
}

jest.setTimeout(60_000);
beforeAll(ensureBuilt, 150_000);
afterAll(async () => {
  await Promise.all(runs.map((r) => r.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('compile cache: off by default, on with NODE_COMPILE_CACHE', () => {
  const cacheDir = join(tempDir(), 'cache');
  const plainTmp = tempDir();
  const directCache = join(tempDir(), 'cache');
  /**
   * The three servers whose first seconds after listening are watched (a default start, the
   * installed command and dist/cli.js with NODE_COMPILE_CACHE) boot at once, each with its own
   * directories: their COMPILE_CACHE_FLUSH_DELAY_MS pass together, not one after another.
   */
  let plain: { run: CliRun; base: string };
  let installed: { run: CliRun; base: string };
  let direct: { run: CliRun; base: string };
  /** When all three listened (each listened by then). */
  let listened = 0;
  beforeAll(async () => {
    [plain, installed, direct] = await Promise.all([
      boot({ TMPDIR: plainTmp }),
      boot({ NODE_COMPILE_CACHE: cacheDir }),
      boot({ NODE_COMPILE_CACHE: directCache }, 'dist'),
    ]);
    listened = Date.now();
  });

  it('a default start writes no cache, neither while it runs nor at exit', async () => {
    await sleep(Math.max(0, listened + COMPILE_CACHE_FLUSH_DELAY_MS + 1_000 - Date.now()));
    await stopGracefully(plain);
    expect(readdirSync(plainTmp)).toEqual([]);
  });

  it('with NODE_COMPILE_CACHE the installed command writes the boot’s modules there soon after it listens, not only at exit', async () => {
    const { run, base } = installed;
    expect((await awaitEntries(cacheDir, MANY, base)).length).toBeGreaterThanOrEqual(MANY);
    expect(run.stderr()).toBe(''); // nothing said about the cache
    expect(run.child.exitCode).toBeNull();
    await run.stop(); // SIGKILL: what is on disk was written while it ran
  });

  it('a second start reads it: Node accepts the cached code of the app’s own modules and of its ESM packages', async () => {
    const server = await boot({ NODE_COMPILE_CACHE: cacheDir, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
    await stopGracefully(server);
    const { run } = server;
    const log = run.stderr();
    const accepted = log.split('\n').filter((l) => / was accepted/.test(l));
    expect(accepted.length).toBeGreaterThanOrEqual(MANY);
    // The server's own modules, in one file (dist/cli.js: scripts/bundle-vendor.mjs).
    expect(log).toContain(`V8 code cache for CommonJS ${join(ROOT, 'dist', 'cli.js')} was accepted`);
    // NestJS, ES modules, from its bundle beside the app (dist/vendor: scripts/bundle-vendor.mjs).
    expect(log).toMatch(/V8 code cache for ESM file:\/\/\S*\/dist\/vendor\/core\.mjs was accepted/);
    // Every module of dist/ came from the cache: none had to be compiled afresh.
    expect(log.split('\n').filter((l) => l.includes(join(ROOT, 'dist')) && / was not initialized| was rejected/.test(l))).toEqual([]);
  });

  it('dist/cli.js run directly (as the benchmark runs it) writes it soon after listening as well', async () => {
    const { run, base } = direct;
    expect((await awaitEntries(directCache, MANY, base)).length).toBeGreaterThanOrEqual(MANY);
    expect(run.child.exitCode).toBeNull(); // written while it ran
    await run.stop();
  });
});

describe('compile cache: off, or impossible', () => {
  it('NODE_DISABLE_COMPILE_CACHE=1 writes nothing, neither to the default directory nor to NODE_COMPILE_CACHE, not even at exit', async () => {
    const tmp = tempDir();
    const operators = join(tmp, 'operator-cache');
    const { run, base } = await boot({ TMPDIR: tmp, NODE_COMPILE_CACHE: operators, NODE_DISABLE_COMPILE_CACHE: '1' });
    expect((await request(`${base}/health/live`)).status).toBe(200);
    await stopGracefully({ run, base });
    expect(readdirSync(tmp)).toEqual([]);
  });

  // A path under a regular file can be created by no one, root included (CI runs as root, which
  // file modes would not stop).
  it('a NODE_COMPILE_CACHE that cannot be created still boots quietly and answers 200 on /health/live', async () => {
    const file = join(tempDir(), 'not-a-directory');
    writeFileSync(file, '');
    const { run, base } = await boot({ NODE_COMPILE_CACHE: join(file, 'cache') });
    expect((await request(`${base}/health/live`)).status).toBe(200);
    await stopGracefully({ run, base });
    expect(run.stderr()).toBe('');
  });
});
