import type { Logger } from 'pino';
import type { AgentDefinition } from '../agents/config/agent-definition';
import type { RateLimitDefaults } from '../config/env.config';
import type { StateStore } from '../state/state-store';
import type { Telemetry } from '../telemetry/telemetry';
import { MemoryRateLimitStore } from './memory-rate-limit.store';
import { isScriptRunner, RedisRateLimitStore } from './redis-rate-limit.store';
import type { RateLimitStore } from './rate-limit-store';
import { RateLimiter } from './rate-limiter.service';

/** One memory of windows per state store: an app rebuilt by a config reload shares its store, so it keeps the windows too. */
const memoryWindows = new WeakMap<StateStore, MemoryRateLimitStore>();

/**
 * The limiter over the windows' store: Redis (shared by every replica) when the state store is
 * Redis, on its connection; this replica's memory otherwise (memory and DynamoDB state stores).
 */
export function createRateLimiter(
  store: StateStore,
  agents: AgentDefinition[],
  defaults: RateLimitDefaults,
  telemetry: Telemetry,
  logger: Logger,
): RateLimiter {
  return new RateLimiter(windowsOf(store), agents, defaults, telemetry, logger);
}

function windowsOf(store: StateStore): RateLimitStore {
  if (isScriptRunner(store)) return new RedisRateLimitStore(store);
  let windows = memoryWindows.get(store);
  if (!windows) {
    windows = new MemoryRateLimitStore();
    memoryWindows.set(store, windows);
  }
  return windows;
}
