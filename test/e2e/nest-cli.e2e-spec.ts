/**
 * The NestJS CLI conventions (nest-cli.json): `npx nest build` compiles what `tsc -p
 * tsconfig.build.json` compiles (the dist/ the bin runs), file for file, and `npm run start:dev`
 * (`nest start --watch`) serves the demo agents on the embedded defaults. Both builds go to
 * temporary directories at the same depth (source maps hold paths relative to their output), never
 * to the dist/ other tests run.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from '../support/http';
import { freePort } from '../support/services';

const ROOT = join(__dirname, '..', '..');
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

/** A tsconfig extending tsconfig.build.json with only the output directory moved; returns it and that directory. */
function buildConfig(): { config: string; outDir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ta-build-'));
  const outDir = join(dir, 'out');
  const config = join(dir, 'tsconfig.json');
  // typeRoots: types are otherwise looked up beside this file, not the project.
  writeFileSync(
    config,
    JSON.stringify({ extends: join(ROOT, 'tsconfig.build.json'), compilerOptions: { outDir, typeRoots: [join(ROOT, 'node_modules', '@types')] } }),
  );
  return { config, outDir };
}

/** Every file under `dir`, relative to it, with its content. */
function tree(dir: string): Map<string, string> {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  return new Map(files.map((e) => [relative(dir, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name), 'utf8')]));
}

describe('nest build', () => {
  it('succeeds and emits exactly what tsc -p tsconfig.build.json emits', () => {
    const nest = buildConfig();
    const tsc = buildConfig();
    // nest resolves -p against the working directory.
    const built = spawnSync(bin('nest'), ['build', '-p', relative(ROOT, nest.config)], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    expect({ status: built.status, output: built.stdout + built.stderr }).toEqual({ status: 0, output: '' });
    spawnSync(bin('tsc'), ['-p', tsc.config], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });

    const [fromNest, fromTsc] = [tree(nest.outDir), tree(tsc.outDir)];
    expect([...fromNest.keys()].sort()).toEqual([...fromTsc.keys()].sort());
    expect(fromNest.get('cli.js')).toBeDefined(); // what bin/teal-agent-server.js runs
    const differing = [...fromNest].filter(([file, text]) => fromTsc.get(file) !== text).map(([file]) => file);
    expect(differing).toEqual([]);
  }, 600_000);
});

describe('npm run start:dev', () => {
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((ok) => child!.once('exit', ok));
    // Its own process group: npm, the nest watcher and the server it spawned all go.
    process.kill(-child.pid!, 'SIGKILL');
    await exited;
  });

  it('serves the demo agents (dev auth, offline model) in watch mode', async () => {
    const port = await freePort();
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TA_PORT: String(port), TA_LOG_LEVEL: 'warn' };
    child = spawn('npm', ['run', 'start:dev'], { cwd: ROOT, env, detached: true, stdio: 'ignore' });
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
