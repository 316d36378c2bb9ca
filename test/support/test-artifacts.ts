import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

/**
 * Where a test leaves what a reader needs after the run (the console's screenshots, a failed short
 * soak's report): test-artifacts/{name} (or TA_TEST_ARTIFACTS/{name}), which outlives the run's
 * temporary directory (scripts/jest-run.sh removes that).
 */
export function artifactDir(name: string): string {
  const dir = join(process.env.TA_TEST_ARTIFACTS ?? join(ROOT, 'test-artifacts'), name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
