// Bundles the NestJS modules the server loads into dist/vendor/nest (a few ES modules, not ~380),
// with a manifest naming which file each import specifier resolves to; src/boot-nest-bundle.ts
// points those specifiers there when the server starts. Why: Nest is ES modules only, and Node
// resolves, reads and links each of its ~380 files separately (package scopes, stats, a module
// record each): ~40 % of the time to load the server (issue 27, docs/configuration.md, Start-up footprint).
// rxjs, which Nest imports everywhere (~230 CommonJS files), is bundled with it; everything else
// stays external (express, reflect-metadata and the rest: from node_modules), and so do Nest's
// optional packages that are not installed. The server's own code does not load rxjs at boot (the
// telemetry interceptor's rxjs path is the fallback, src/common/http/promise-interceptors.ts), so
// the process holds one copy of it.
//
// Usage (after tsc, from the repository root): node scripts/bundle-nest.mjs. Run by `npm run build`,
// scripts/start.sh, scripts/test.sh and scripts/bench.sh. Without the bundle (a plain `tsc` or
// `nest build`) the server loads Nest from node_modules, as before.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'vendor', 'nest');
const require = createRequire(join(root, 'package.json'));

/** Every @nestjs specifier the server and its packages import at run time (test/e2e/nest-bundle.e2e-spec.ts checks nothing else is loaded). */
export const NEST_SPECIFIERS = {
  common: '@nestjs/common',
  'common-constants': '@nestjs/common/constants.js',
  core: '@nestjs/core',
  'core-interceptors-consumer': '@nestjs/core/interceptors/interceptors-consumer.js',
  'platform-express-adapter': '@nestjs/platform-express/adapters/express-adapter.js',
};

/** Nest's optional packages (loaded only when an app uses them; not installed here). */
const OPTIONAL = /^@nestjs\/(microservices|websockets)(\/|$)/;

const { build } = await import('rolldown');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  input: Object.fromEntries(Object.entries(NEST_SPECIFIERS).map(([name, specifier]) => [name, require.resolve(specifier)])),
  external: (id) => OPTIONAL.test(id) || !(id.startsWith('.') || id.startsWith('/') || id.startsWith('@nestjs/') || /^rxjs(\/|$)/.test(id)),
  platform: 'node',
  logLevel: 'warn',
  output: { dir: out, format: 'esm', entryFileNames: '[name].mjs', chunkFileNames: 'chunk-[hash].mjs' },
});
const manifest = Object.fromEntries(Object.entries(NEST_SPECIFIERS).map(([name, specifier]) => [specifier, `${name}.mjs`]));
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`bundled NestJS into ${relative(root, out)}/ (${Object.keys(manifest).length} entries)\n`);
