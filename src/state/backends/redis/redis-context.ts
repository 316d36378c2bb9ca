import { StoreClock } from '../../store-clock';
import { RedisKeys } from './redis-keys';
import { RedisWire } from './redis-wire';

/** What the commit script (redis-commit.lua.ts) answers. */
export type CommitReply = ['ok', string, string] | ['conflict', number] | ['corrupt', string] | ['taken', string];

/**
 * What the facade (redis.state-store.ts) hands each room (src/state/backends/README.md): the
 * connection, the key prefix, the store's clock, and its bounded call.
 */
export interface RedisContext {
  readonly redis: RedisWire;
  readonly prefix: string;
  /** The bound on each wait (RedisStateStoreOptions.timeoutMs). */
  readonly timeoutMs: number;
  /** The Redis server's clock (`TIME`): sampled on every connect and by every commit. */
  readonly clock: StoreClock;
  /** Whether commits keep the archive index (RedisStateStoreOptions.archiveIndex). */
  readonly archiveIndex: boolean;
  keys(tenantId: string): RedisKeys;
  now(): number;
  /** Waits (boundedly) for a connection, runs `fn`, and maps failures to the contract's errors (`key` names what failed). */
  run<T>(key: string, fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
  /** Calls `fn` with `timeoutMs` as the reply timeout of the commands it sends. */
  sent<T>(fn: () => Promise<T>, timeoutMs: number): Promise<T>;
}

/**
 * Request records are unbounded (an answer is stored whatever its size), so calls that carry them
 * wait longer than `timeoutMs` for their reply: a commit `timeoutMs` more per MiB it sends, a read
 * of request records READ_RECORDS_TIMEOUT_FACTOR × `timeoutMs` (its size is known only once read).
 * A stalled Redis still fails them within a bounded time.
 */
export const READ_RECORDS_TIMEOUT_FACTOR = 2;
const MIB = 1024 * 1024;
export const bulkTimeout = (timeoutMs: number, bytes: number) => timeoutMs * (1 + Math.floor(bytes / MIB));

/** Redis `TIME` (seconds, microseconds) as epoch milliseconds. */
export function redisTimeMs(seconds: string | number, micros: string | number): number {
  return Number(seconds) * 1000 + Number(micros) / 1000;
}
