import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Debian's libfaketime (package `faketime`, which .ci/run installs), wherever the architecture puts
 * it; undefined when it is not installed (a test then fails saying so, it is not skipped).
 * Preloaded into node itself (LD_PRELOAD), not through the `faketime` wrapper, which would survive
 * as the parent of an orphan when the server is killed.
 */
export const LIBFAKETIME = ['x86_64-linux-gnu', 'aarch64-linux-gnu', '.']
  .map((dir) => join('/usr/lib', dir, 'faketime', 'libfaketime.so.1'))
  .find((path) => existsSync(path));
