import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The console's browser-test helpers; the browser itself is test/support/browser.ts. */
const ROOT = resolve(__dirname, '..', '..');

/** Where a browser test leaves its screenshots: test-artifacts/{name} (or TA_TEST_ARTIFACTS/{name}). */
export function artifactDir(name: string): string {
  const dir = join(process.env.TA_TEST_ARTIFACTS ?? join(ROOT, 'test-artifacts'), name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Builds the console with Vite unless dist/console holds a build already (scripts/test.sh builds it first). */
export function ensureConsoleBuilt(): void {
  if (existsSync(join(ROOT, 'dist', 'console', 'index.html'))) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '-c', 'console/vite.config.mjs'], {
    cwd: ROOT,
    stdio: 'pipe',
  });
}
