import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';

/**
 * Node's bundled undici stays unloaded at boot (src/boot-http-facade.ts, issue 14): NestJS (ESM)
 * imports 'http', whose ES facade would otherwise read node:http's WebSocket, CloseEvent and
 * MessageEvent getters and so load all of undici. Real processes over the compiled dist/.
 */
const ROOT = resolve(__dirname, '../..');
const PROBE = join(ROOT, 'test', 'support', 'module-probe.cjs');
const UNDICI = 'internal/deps/undici/undici';

const runs: CliRun[] = [];
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-http-facade-'));
  dirs.push(dir);
  return dir;
}

jest.setTimeout(60_000);
beforeAll(ensureBuilt, 150_000);
afterAll(async () => {
  await Promise.all(runs.map((r) => r.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

it('a server that listens has not loaded undici', async () => {
  const file = join(tempDir(), 'probe.json');
  const run = runCli(['serve', join(ROOT, 'bench', 'agents'), '--port', '0'], {
    TA_AUTH_MODE: 'dev',
    TA_LOG_LEVEL: 'info',
    TA_BASE_URL: 'http://127.0.0.1:9/v1',
    TA_API_KEY: 'x',
    NODE_OPTIONS: `--require ${JSON.stringify(PROBE)}`,
    MODULE_PROBE_FILE: file,
  });
  runs.push(run);
  await run.listening();
  run.child.kill('SIGUSR2');
  for (let i = 0; i < 200 && !existsSync(file); i++) await sleep(25);
  const { builtins } = JSON.parse(readFileSync(file, 'utf8')) as { builtins: string[] };
  expect(builtins).toContain('http'); // the facade was built
  expect(builtins).not.toContain(UNDICI);
});

it('node:http is whole again afterwards; an ES module that imported those three names by name reads undefined', () => {
  const dir = tempDir();
  writeFileSync(
    join(dir, 'esm.mjs'),
    `import http, { WebSocket, STATUS_CODES } from 'node:http';
export const named = WebSocket;
export const status = STATUS_CODES[404];
export const viaDefault = () => http.WebSocket;`,
  );
  writeFileSync(
    join(dir, 'main.cjs'),
    `const { withoutHttpUndiciExports } = require(${JSON.stringify(join(ROOT, 'dist', 'boot-http-facade.js'))});
const esm = withoutHttpUndiciExports(() => require('./esm.mjs'));
const undiciAfterLoad = process.moduleLoadList.includes('NativeModule ${UNDICI}');
process.stdout.write(JSON.stringify({
  undiciAfterLoad,
  named: typeof esm.named,
  status: esm.status,
  viaDefault: esm.viaDefault() === globalThis.WebSocket && typeof globalThis.WebSocket === 'function',
  viaRequire: require('node:http').WebSocket === globalThis.WebSocket,
  descriptor: typeof Object.getOwnPropertyDescriptor(require('node:http'), 'WebSocket').get,
}));`,
  );
  const out = JSON.parse(execFileSync(process.execPath, [join(dir, 'main.cjs')], { encoding: 'utf8' })) as Record<string, unknown>;
  expect(out).toEqual({ undiciAfterLoad: false, named: 'undefined', status: 'Not Found', viaDefault: true, viaRequire: true, descriptor: 'function' });
});
