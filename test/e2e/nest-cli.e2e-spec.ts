/**
 * The NestJS CLI conventions (nest-cli.json): `npx nest build` compiles what `tsc -p
 * tsconfig.build.json` compiles, file for file: the dist/ the bin runs, which the test run builds
 * once and every file shares (scripts/test.sh; test/support/built-cli.ts rebuilds it when a source
 * is newer). And `npm run start:dev` (`nest start --watch`) serves the demo agents on the embedded
 * defaults. Neither writes to that dist/: both compile into temporary directories, since tsc
 * rewrites every file it emits and another test may be starting the bin from dist/ meanwhile.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureBuilt } from '../support/built-cli';
import { request } from '../support/http';
import { freePort } from '../support/services';

const ROOT = join(__dirname, '..', '..');
const DIST = join(ROOT, 'dist');
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

/**
 * A tsconfig extending tsconfig.build.json with only the output directory moved; returns it and
 * that directory. `beside`: the output goes to `.nest-start-*` beside dist/, for a server to run
 * from it (its requires find node_modules/, its plugins' fallback dist/../demos/plugins).
 */
function buildConfig(beside = false): { config: string; outDir: string } {
  const dir = mkdtempSync(beside ? join(ROOT, '.nest-start-') : join(tmpdir(), 'ta-build-'));
  const outDir = beside ? dir : join(dir, 'out');
  const config = join(dir, 'tsconfig.json');
  // typeRoots: types are otherwise looked up beside this file, not the project.
  writeFileSync(
    config,
    JSON.stringify({ extends: join(ROOT, 'tsconfig.build.json'), compilerOptions: { outDir, typeRoots: [join(ROOT, 'node_modules', '@types')] } }),
  );
  return { config, outDir };
}

/**
 * The files tsc emits under `dir` (dist/console, Vite's, left out), relative to it, with their
 * content; a source map's `sources` made absolute, since they are relative to where the map lies.
 */
function tree(dir: string): Map<string, string> {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  const emitted = files.map((e) => relative(dir, join(e.parentPath, e.name))).filter((f) => !f.startsWith('console/'));
  return new Map(
    emitted.map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      if (!file.endsWith('.map')) return [file, text];
      const map = JSON.parse(text) as { sources: string[] };
      return [file, JSON.stringify({ ...map, sources: map.sources.map((s) => resolve(dirname(join(dir, file)), s)) })];
    }),
  );
}

/** Whether the source an emitted file comes from still exists (dist/ may keep the output of a file since moved or deleted). */
const hasSource = (file: string) => existsSync(join(ROOT, 'src', file.replace(/\.js(\.map)?$/, '.ts')));

describe('nest build', () => {
  it('succeeds and emits exactly what tsc -p tsconfig.build.json emits (the shared dist/)', () => {
    ensureBuilt();
    const nest = buildConfig();
    // nest resolves -p against the working directory.
    const built = spawnSync(bin('nest'), ['build', '-p', relative(ROOT, nest.config)], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    expect({ status: built.status, output: built.stdout + built.stderr }).toEqual({ status: 0, output: '' });

    const [fromNest, fromTsc] = [tree(nest.outDir), tree(DIST)];
    const current = [...fromTsc.keys()].filter(hasSource);
    expect(current.length).toBeGreaterThan(300);
    expect([...fromNest.keys()].sort()).toEqual(current.sort());
    expect(fromNest.get('cli.js')).toBeDefined(); // what bin/teal-agent-server.js runs
    // The build's last step (scripts/bundle-vendor.mjs, run by scripts/test.sh) made dist/cli.js
    // the whole server in one file, with its own map: those two are not tsc's; nest writes tsc's.
    const BANNER = '// The server in one file (scripts/bundle-vendor.mjs)';
    const oneFile = fromTsc.get('cli.js')!.startsWith(BANNER) ? ['cli.js', 'cli.js.map'] : [];
    expect(fromNest.get('cli.js')!.startsWith(BANNER)).toBe(false);
    const differing = [...fromNest].filter(([file, text]) => !oneFile.includes(file) && fromTsc.get(file) !== text).map(([file]) => file);
    expect(differing).toEqual([]);
  }, 600_000);
});

describe('npm run start:dev', () => {
  let child: ChildProcess | undefined;
  let started: string | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((ok) => child!.once('exit', ok));
      // Its own process group: npm, the nest watcher and the server it spawned all go.
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
    }
    if (started) rmSync(started, { recursive: true, force: true });
  });

  it('serves the demo agents (dev auth, offline model) in watch mode', async () => {
    const port = await freePort();
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TA_PORT: String(port), TA_LOG_LEVEL: 'warn' };
    // Into a directory of its own (`-p`, passed on to `nest start`), not the shared dist/.
    const { config } = buildConfig(true);
    started = dirname(config);
    child = spawn('npm', ['run', 'start:dev', '--', '-p', relative(ROOT, config)], { cwd: ROOT, env, detached: true, stdio: 'ignore' });
    const base = `http://127.0.0.1:${port}/Assistant/0.1`;
    const deadline = Date.now() + 240_000;
    let live = 0;
    while (live !== 200 && Date.now() < deadline && child.exitCode === null) {
      await sleep(500);
      live = (await request(`${base}/health/live`).catch(() => undefined))?.status ?? 0;
    }
    expect(live).toBe(200);
    const answer = await request(base, { body: { items: [{ content_type: 'text', content: 'hello from watch mode' }] } });
    expect(answer.status).toBe(200);
    expect(answer.body.content.output).toBe('hello from watch mode');
  }, 300_000);
});
