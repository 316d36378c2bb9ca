// Bundles the packages whose many small files make the server slow to load into a few files in
// dist/vendor, with a manifest naming which file each import specifier resolves to;
// src/boot-vendor-bundle.ts points those specifiers there when the server starts (issue 27,
// docs/configuration.md, Start-up footprint). Why: Node resolves, reads and links (or wraps and
// compiles) every file of a package separately, and NestJS alone is ~380 ES modules: ~40 % of the
// time to load the server.
// - NestJS (ES modules), with the rxjs it imports everywhere (~230 CommonJS files): one build, so
//   Nest's packages share its chunks and the process holds one Nest and one rxjs. The server's own
//   code does not load rxjs at boot (the telemetry interceptor's rxjs path is the fallback,
//   src/common/http/promise-interceptors.ts). Nest's optional packages, not installed, stay external.
// - yaml, @opentelemetry/api and class-transformer (CommonJS, 72, 51 and 34 files): one CommonJS
//   file each, so `require` returns what it always did. Likewise PostgreSQL's client (loaded only
//   on that store, or with the archive): pg and each of its own packages (34 files in all), which
//   pg's bundle requires by name, so the manifest sends those to their bundles too. Its optional
//   pg-native (not installed) and pg-cloudflare (Cloudflare's runtime only) stay outside: each is
//   required only when asked for.
// Everything else stays in node_modules (Express, reflect-metadata, pino...).
// - The server's own modules: dist/cli.js becomes one file holding it and every dist module it
//   loads (~320 CommonJS files tsc wrote), each still a CommonJS module of its own (its own
//   `exports` and `module`, run when first required, so what is required lazily stays lazy); every
//   package stays a `require` (node_modules, or this bundle through the manifest). Measured: spawn to
//   the first 200 ~100-140 ms sooner. The other dist files stay, for what loads one of them alone
//   (`nest start`, a test); modules find the package's files through src/package-root.ts, since
//   here every one of them has dist/ as its `__dirname`.
//
// Usage (after tsc, from the repository root): node scripts/bundle-vendor.mjs. Run by `npm run
// build`, scripts/start.sh, scripts/test.sh and scripts/bench.sh. Without the bundle (a plain `tsc`
// or `nest build`) the server loads these packages from node_modules, as before.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'vendor');
const require = createRequire(join(root, 'package.json'));

/** Every @nestjs specifier the server and its packages import at run time (test/e2e/boot-footprint.e2e-spec.ts checks nothing else is). */
const NEST = {
  common: '@nestjs/common',
  'common-constants': '@nestjs/common/constants.js',
  core: '@nestjs/core',
  'core-interceptors-consumer': '@nestjs/core/interceptors/interceptors-consumer.js',
  'platform-express-adapter': '@nestjs/platform-express/adapters/express-adapter.js',
};
/** CommonJS packages imported by their name only (no deep paths): one file each. */
const COMMONJS = {
  yaml: 'yaml',
  'opentelemetry-api': '@opentelemetry/api',
  'class-transformer': 'class-transformer',
  pg: 'pg',
  'pg-protocol': 'pg-protocol',
  'pg-types': 'pg-types',
  'pg-pool': 'pg-pool',
  pgpass: 'pgpass',
  'pg-connection-string': 'pg-connection-string',
};

/** Nest's optional packages (loaded only when an app uses them; not installed here). */
const OPTIONAL = /^@nestjs\/(microservices|websockets)(\/|$)/;
const isPath = (id) => id.startsWith('.') || id.startsWith('/');

const { build } = await import('rolldown');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  input: Object.fromEntries(Object.entries(NEST).map(([name, specifier]) => [name, require.resolve(specifier)])),
  external: (id) => OPTIONAL.test(id) || !(isPath(id) || id.startsWith('@nestjs/') || /^rxjs(\/|$)/.test(id)),
  platform: 'node',
  logLevel: 'warn',
  output: { dir: out, format: 'esm', entryFileNames: '[name].mjs', chunkFileNames: 'chunk-[hash].mjs' },
});
for (const [name, specifier] of Object.entries(COMMONJS)) {
  await build({
    input: require.resolve(specifier),
    external: (id) => !isPath(id),
    platform: 'node',
    logLevel: 'warn',
    output: { file: join(out, `${name}.cjs`), format: 'cjs' },
  });
}
// Last, the server itself: dist/cli.js as tsc wrote it becomes the whole server, with a source map
// to the files it holds (`node --enable-source-maps` and the benchmark's profiles name them).
const cli = join(root, 'dist', 'cli.js');
const BANNER = '// The server in one file (scripts/bundle-vendor.mjs), from the modules tsc wrote beside it.';
if (!readFileSync(cli, 'utf8').startsWith(BANNER)) {
  const whole = join(root, 'dist', 'cli.whole.js'); // beside it, so the map's sources stay right
  await build({
    input: cli,
    external: (id) => !isPath(id),
    platform: 'node',
    logLevel: 'warn',
    output: { file: whole, format: 'cjs', comments: false, banner: BANNER, sourcemap: true },
  });
  // ASCII only: V8 keeps a script's source for its life, one byte a character when every character
  // fits one, else two for all of them; a few non-ASCII characters in strings (·, →, …) would double
  // the whole file's. Comments are gone, so every one left is in a string, a template or a regular
  // expression, where the escape means the same character.
  const code = readFileSync(whole, 'utf8')
    .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/\/\/# sourceMappingURL=\S+\s*$/, '//# sourceMappingURL=cli.js.map\n');
  writeFileSync(cli, code);
  const map = JSON.parse(readFileSync(`${whole}.map`, 'utf8'));
  writeFileSync(`${cli}.map`, JSON.stringify({ ...map, file: 'cli.js' }));
  rmSync(whole);
  rmSync(`${whole}.map`);
}
const manifest = Object.fromEntries([
  ...Object.entries(NEST).map(([name, specifier]) => [specifier, `${name}.mjs`]),
  ...Object.entries(COMMONJS).map(([name, specifier]) => [specifier, `${name}.cjs`]),
]);
writeFileSync(join(out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`bundled ${Object.keys(manifest).length} entries into ${relative(root, out)}/\n`);
