import { constants, enableCompileCache, flushCompileCache } from 'node:module';
import { debuglog } from 'node:util';

/** NODE_DEBUG=teal-agent-server prints what became of the cache; nothing is printed otherwise. */
const debug = debuglog('teal-agent-server');

/**
 * Turns on Node's on-disk V8 compile cache for every module loaded after this call (issue 14: a
 * warm cache cut spawn → first 200 by about a third, since the ~1,500 modules of a boot are then
 * deserialized instead of parsed and compiled). Called first by the entry points (the bin and
 * dist/cli.js run directly), never on import, so tests that import the app are left alone.
 *
 * - An operator's NODE_COMPILE_CACHE wins: Node has already enabled that directory before any code
 *   ran, and this call answers ALREADY_ENABLED. NODE_DISABLE_COMPILE_CACHE=1 (Node's own switch)
 *   turns it off: the call answers DISABLED.
 * - The default is Node's own, `node-compile-cache` under os.tmpdir() (TMPDIR), not a directory of
 *   ours: the temporary directory is writable where the package directory is not (the image runs as
 *   uid 1000 over a root-owned /app; Kubernetes mounts an emptyDir at /tmp under a read-only root),
 *   and it is the directory other Node tools already share (TypeScript's tsc uses it too). Sharing
 *   is safe: Node keeps one subdirectory per Node version, and each entry is found by the module's
 *   path and used only when the hash of the module's source matches (a rebuilt dist/ recompiles).
 * - A directory that cannot be created or written never stops the boot: Node answers FAILED (or
 *   silently skips the writes) and modules compile as without a cache.
 */
export function enableBootCompileCache(): void {
  const result = enableCompileCache();
  if (result.status === constants.compileCacheStatus.FAILED || result.status === constants.compileCacheStatus.DISABLED) {
    debug('compile cache off: %s', result.message);
  } else {
    debug('compile cache in %s', result.directory);
  }
}

/**
 * How long after listening the boot's cache entries are written. Writing them blocks the event loop
 * (measured: ~400 ms for the ~1,700 entries of a cold cache, ~2 ms when nothing changed), so not at
 * once: a new server's first requests (a probe, a load balancer's check) are answered first.
 */
export const COMPILE_CACHE_FLUSH_DELAY_MS = 5_000;

/**
 * Writes what the boot compiled COMPILE_CACHE_FLUSH_DELAY_MS after listening, not only at exit as
 * Node does: a server is often stopped by SIGKILL (a pod past its grace period, a crash), and then
 * Node's own write at exit never happens. Entries that did not change are skipped, so a warm boot
 * writes nothing. No-op when the cache is off; the timer never holds the process open.
 */
export function flushBootCompileCacheSoon(): void {
  setTimeout(flushCompileCache, COMPILE_CACHE_FLUSH_DELAY_MS).unref();
}
