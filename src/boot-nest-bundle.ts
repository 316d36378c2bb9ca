import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Where scripts/bundle-nest.mjs writes the bundle, beside the compiled server (dist/). */
export const NEST_BUNDLE_DIR = join(__dirname, 'vendor', 'nest');

/**
 * Loads NestJS from its bundle (dist/vendor/nest, built by scripts/bundle-nest.mjs) when there is
 * one: each import specifier its manifest names (`@nestjs/common`, `@nestjs/core`, the few deep
 * ones the server uses) resolves to the bundle's file, for every importer (ours and packages such
 * as @nestjs/passport alike), so there is one Nest in the process. Called before Nest first loads.
 *
 * Why: Nest is ES modules only, and Node resolves, reads and links its ~380 files one by one (and
 * rxjs's ~230, bundled with it); from a handful of bundled files the server starts ~160 ms sooner
 * (issue 27, docs/configuration.md, Start-up footprint). Without a bundle (a plain `tsc` or `nest build`, the tests run from sources) nothing
 * changes: Nest loads from node_modules. Returns whether the bundle is used. Called once, by the
 * CLI's `serve`.
 */
export function useNestBundle(dir = NEST_BUNDLE_DIR): boolean {
  let manifest: Record<string, string>;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, string>;
  } catch {
    return false;
  }
  const urls = new Map(Object.entries(manifest).map(([specifier, file]) => [specifier, pathToFileURL(join(dir, file)).href]));
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const url = urls.get(specifier);
      return url ? { url, format: 'module', shortCircuit: true } : nextResolve(specifier, context);
    },
  });
  return true;
}
