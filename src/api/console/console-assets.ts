import { existsSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { PACKAGE_ROOT } from '../../package-root';

/** Where Vite writes the console (console/vite.config.ts): `dist/console` of the package. */
export const CONSOLE_DIST = join(PACKAGE_ROOT, 'dist', 'console');

const TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
};

/** A built asset by its file name (hashed by Vite, so never a path), or undefined. */
export function consoleAsset(dir: string, name: string): { body: Buffer; type: string } | undefined {
  const type = TYPES[extname(name)];
  if (!type || !/^[\w.-]+$/.test(name) || name.startsWith('.')) return undefined;
  const path = join(dir, 'assets', name);
  return existsSync(path) ? { body: readFileSync(path), type } : undefined;
}

/** The built page, or undefined when the console was not built (`npm run build:console`). */
export function consoleIndex(dir: string): string | undefined {
  const path = join(dir, 'index.html');
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

/**
 * The page's policy: scripts, styles and connections of this origin only (no CDN, no inline
 * script); `connect-src` adds the Entra authority when MSAL signs in from the page.
 */
export function consoleCsp(authority?: string): string {
  const idp = authority ? ` ${new URL(authority).origin}` : '';
  const connect = `'self'${idp}`;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connect}`,
    // MSAL renews tokens in a hidden frame of the authority.
    ...(idp ? [`frame-src${idp}`] : []),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
