import { BackendBootError } from '../../backend-boot-error';
import { StateStoreUnavailableError } from '../../state.errors';

/** What the boot check needs of the store: the server's `maxmemory-policy`. */
export interface MaxMemoryPolicySource {
  maxMemoryPolicy(): Promise<string | undefined>;
}

export interface EvictionCheckOptions {
  /** NODE_ENV=production: an evicting policy refuses the boot instead of warning. */
  production: boolean;
  logger?: { warn(message: string): void };
}

const ADVICE = 'set maxmemory-policy to noeviction (or a volatile-* policy, which evicts only keys with a TTL)';

/**
 * At boot: an `allkeys-*` eviction policy lets Redis drop any key when memory runs out, so part of a
 * task (its header, a request, an index) can silently vanish. In production that refuses the boot
 * (BackendBootError: one plain line); otherwise it is a warning. A policy that cannot be read
 * (CONFIG renamed or denied, as managed Redis often does, or Redis unreachable: requests then get
 * 503 until it comes back) is a warning, never a boot failure.
 */
export async function checkRedisEviction(store: MaxMemoryPolicySource, options: EvictionCheckOptions): Promise<void> {
  let policy: string | undefined;
  try {
    policy = await store.maxMemoryPolicy();
  } catch (err) {
    const why = err instanceof StateStoreUnavailableError ? 'Redis is unreachable' : `CONFIG GET was refused: ${(err as Error)?.message ?? String(err)}`;
    options.logger?.warn(
      `Redis maxmemory-policy could not be checked (${why}); make sure it is noeviction or volatile-*, since an allkeys-* policy can silently drop part of a task`,
    );
    return;
  }
  if (policy === undefined || !policy.toLowerCase().startsWith('allkeys-')) return;
  const message = `Redis maxmemory-policy is ${policy}, which can silently drop part of a task when memory runs out: ${ADVICE}`;
  if (options.production) throw new BackendBootError(`${message} (refused because NODE_ENV=production)`);
  options.logger?.warn(message);
}
