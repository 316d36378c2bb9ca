import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The console's browser-test helpers; the browser itself is test/support/browser.ts. */
const ROOT = resolve(__dirname, '..', '..');

/** Builds the console with Vite unless dist/console holds a build already (scripts/test.sh builds it first). */
export function ensureConsoleBuilt(): void {
  if (existsSync(join(ROOT, 'dist', 'console', 'index.html'))) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '-c', 'console/vite.config.mjs'], {
    cwd: ROOT,
    stdio: 'pipe',
  });
}
