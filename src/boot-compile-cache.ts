import { flushCompileCache } from 'node:module';

// Node's on-disk V8 compile cache is off by default and on with NODE_COMPILE_CACHE=<directory>
// (Node's own variable, read before any code runs; NODE_DISABLE_COMPILE_CACHE=1 wins over it).
// Not on by default because it no longer pays for itself here (issue 14, measured with the
// benchmark's agent, 9 alternating starts each): the boot loads ~930 modules since class-validator's
// index and undici are left out, and a warm cache then saves ~40 ms of the boot's ~1.1 s of CPU
// while Node keeps every entry it read in memory for the life of the process (+6.5 MiB RSS, 104 vs
// 98 MiB). A configuration that loads far more modules (MCP, Entra, the OpenAI SDK, DynamoDB) may
// find it worth turning on: docs/configuration.md, Compile cache.

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
