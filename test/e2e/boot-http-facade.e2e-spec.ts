import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureBuilt } from '../support/built-cli';

/**
 * src/boot-http-facade.ts (issue 14) hides node:http's WebSocket, CloseEvent and MessageEvent
 * getters while the app loads: NestJS (ESM) imports 'http', whose ES facade would otherwise read
 * them and so load all of undici (that a server does not is boot-footprint.e2e-spec.ts's to check).
 * Here: what the module leaves behind, in a real process over the compiled dist/.
 */
const ROOT = resolve(__dirname, '../..');
const UNDICI = 'internal/deps/undici/undici';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-http-facade-'));
  dirs.push(dir);
  return dir;
}

beforeAll(ensureBuilt, 150_000);
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
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
