import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Where scripts/bundle-vendor.mjs writes the bundle, beside the compiled server (dist/). */
export const VENDOR_BUNDLE_DIR = join(__dirname, 'vendor');

/**
 * Loads NestJS (with rxjs), yaml, @opentelemetry/api and class-transformer from their bundle
 * (dist/vendor, built by scripts/bundle-vendor.mjs) when there is one: each import specifier its
 * manifest names resolves to the bundle's file (`.mjs` an ES module, `.cjs` CommonJS), for every
 * importer (ours and packages such as @nestjs/passport alike), so the process holds one copy of
 * each. Called once, by the CLI's `serve`, before any of them loads.
 *
 * Why: Node resolves, reads and links (or wraps) every file of a package separately, and these are
 * ~760 small files (Nest alone ~380 ES modules); from a dozen bundled files the server starts
 * ~200 ms sooner and holds ~3 MiB less (issue 27, docs/configuration.md, Start-up footprint).
 * Without a bundle (a plain `tsc` or `nest build`, the tests run from sources) nothing changes: the
 * packages load from node_modules. Returns whether the bundle is used.
 */
export function useVendorBundle(dir = VENDOR_BUNDLE_DIR): boolean {
  let manifest: Record<string, string>;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, string>;
  } catch {
    return false;
  }
  const targets = new Map(
    Object.entries(manifest).map(([specifier, file]) => [
      specifier,
      { url: pathToFileURL(join(dir, file)).href, format: file.endsWith('.cjs') ? 'commonjs' : 'module' },
    ]),
  );
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const target = targets.get(specifier);
      return target ? { ...target, shortCircuit: true } : nextResolve(specifier, context);
    },
  });
  return true;
}
