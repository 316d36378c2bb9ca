import { ArchiveEntry, LeaseEntry, Page, StateStore, StreamEvent, TaskWrite } from '../../state-store';
import { IdempotencyEntry, RequestRecord, TaskRecord } from '../../state.entities';
import { StateStoreUnavailableError } from '../../state.errors';
import { StoreClock } from '../../store-clock';
import { markArchivedEntries, readUnarchived } from './redis-archive';
import { commitTask } from './redis-commit';
import { RedisContext, redisTimeMs } from './redis-context';
import { deleteTaskStep } from './redis-delete';
import { readIdempotencyEntry } from './redis-idempotency';
import { readLapsedLeases } from './redis-leases';
import { readOwnerSessions, readRequest, readRequests, readSessionTasks, readTask } from './redis-query';
import { appendStreamEntries, readStreamEntries } from './redis-stream';
import { toStateError } from './redis-errors';
import { RedisKeys } from './redis-keys';
import { RedisScript, RedisWire } from './redis-wire';

// The key layout is documented in redis-keys.ts, the commit in redis-commit.lua.ts; each concern
// has its room beside this facade (src/state/backends/README.md).

export interface RedisStateStoreOptions {
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). */
  url: string;
  /** Prefix of every key (default `ta:`); tests use one per file. Must not contain `{`. */
  keyPrefix?: string;
  /**
   * Bound, in ms, on each wait: for the connection to become ready, and for a command's reply
   * (default 1000). A call to an unreachable Redis fails within about twice this.
   */
  timeoutMs?: number;
  /** Keep the archive index (StateStore.listUnarchived; default false: commits list nothing). */
  archiveIndex?: boolean;
}

/**
 * How far two replicas' estimates of the Redis clock may disagree: `TIME` is exact to the
 * microsecond, so each estimate is off by at most half a round trip (docs/api.md, "Leases and clocks").
 */
export const REDIS_CLOCK_SKEW_MS = 250;

/**
 * Redis backend (Redis >= 7.0): a task header hash, one hash field per request, a request-id index
 * and a per-(tenant, owner, session) sorted set, all under the tenant's hash tag; commits are a Lua
 * compare-and-set on the header version.
 *
 * Every call is bounded: waiting for a connection and waiting for a reply each take at most
 * `timeoutMs`, then the call fails with StateStoreUnavailableError. A commit that timed out may
 * still have been applied; retrying it with the same expected version then gets a conflict, never
 * a second write.
 */
export class RedisStateStore extends StateStore {
  private readonly redis: RedisWire;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readyWait?: Promise<void>;
  /** Scripts of other parts (runScript), by their text. */
  private readonly scripts = new Map<string, RedisScript>();
  /** The Redis server's clock (`TIME`): sampled on every connect and by every commit. */
  private readonly clock = new StoreClock({ resolutionMs: 0.001 });
  override readonly clockSkewMs = REDIS_CLOCK_SKEW_MS;
  /** The connection, prefix, clock and bounded call, as every room gets them (redis-context.ts). */
  private readonly ctx: RedisContext;

  constructor(options: RedisStateStoreOptions) {
    super();
    this.prefix = options.keyPrefix ?? 'ta:';
    this.timeoutMs = options.timeoutMs ?? 1000;
    // Commands are never queued while disconnected (a queued commit could run long after its caller
    // was told it failed); whenReady() waits, boundedly, for the connection instead. The wire keeps
    // reconnecting, quickly, for as long as the store lives: Redis coming back must heal it.
    this.redis = new RedisWire(options.url, {
      connectTimeoutMs: this.timeoutMs,
      commandTimeoutMs: this.timeoutMs,
      retryDelayMs: (attempt) => Math.min(attempt * 100, 1000),
    });
    // Sent ahead of whatever waits for the connection, so the first decision already has the clock.
    this.redis.onReady(() => void this.sampleClock());
    this.ctx = {
      redis: this.redis,
      prefix: this.prefix,
      timeoutMs: this.timeoutMs,
      clock: this.clock,
      archiveIndex: options.archiveIndex ?? false,
      keys: (tenantId) => this.keys(tenantId),
      now: () => this.now(),
      run: (key, fn, timeoutMs) => this.run(key, fn, timeoutMs),
      sent: (fn, timeoutMs) => this.sent(fn, timeoutMs),
    };
  }

  /** The prefix of this store's keys: other state on the same connection (rate limits) uses it too. */
  get keyPrefix(): string {
    return this.prefix;
  }

  /**
   * Runs a Lua script of another part (the rate limiter, src/rate-limit) on this connection: one
   * EVALSHA (EVAL once when Redis does not know it yet), bounded and mapped to
   * StateStoreUnavailableError like every call of the store.
   */
  async runScript(lua: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    let script = this.scripts.get(lua);
    if (!script) {
      script = new RedisScript(lua);
      this.scripts.set(lua, script);
    }
    const known = script;
    return this.run(keys[0] ?? 'EVALSHA', () => this.redis.runScript(known, keys.length, ...keys, ...args));
  }

  private keys(tenantId: string): RedisKeys {
    return new RedisKeys(this.prefix, tenantId);
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return readTask(this.ctx, tenantId, taskId);
  }

  async getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    return readTask(this.ctx, tenantId, taskId, true);
  }

  async deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    return deleteTaskStep(this.ctx, tenantId, taskId, await this.getTaskForDeletion(tenantId, taskId), batchSize);
  }

  override async appendStreamEvents(tenantId: string, taskId: string, seq: number, events: StreamEvent[], requestId?: string): Promise<void> {
    return appendStreamEntries(this.ctx, tenantId, taskId, seq, events, requestId);
  }

  override async readStreamEvents(tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
    return readStreamEntries(this.ctx, tenantId, taskId, seq, after);
  }

  async listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
    return readOwnerSessions(this.ctx, tenantId, ownerId, page);
  }

  async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    return readRequests(this.ctx, tenantId, taskId);
  }

  async getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
    return readRequest(this.ctx, tenantId, requestId);
  }

  async listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>> {
    return readSessionTasks(this.ctx, tenantId, ownerId, sessionId, page);
  }

  override now(): number {
    return this.clock.now();
  }

  /** An Idempotency-Key's entry (redis-idempotency.ts); the commit claims them. */
  async getIdempotencyEntry(tenantId: string, key: string): Promise<IdempotencyEntry | undefined> {
    return readIdempotencyEntry(this.ctx, tenantId, key);
  }

  /** The lease index's entries (redis-leases.ts). */
  async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    return readLapsedLeases(this.ctx, before, page);
  }

  /** The archive index's entries (redis-archive.ts). */
  async listUnarchived(before: number, page: { limit: number; cursor?: string }): Promise<Page<ArchiveEntry>> {
    return readUnarchived(this.ctx, before, page);
  }

  async markArchived(entries: { tenantId: string; taskId: string; version: number }[]): Promise<void> {
    return markArchivedEntries(this.ctx, entries);
  }

  async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    return commitTask(this.ctx, tenantId, write);
  }

  /**
   * The server's `maxmemory-policy` (undefined when the reply does not name one). Throws
   * StateStoreUnavailableError when Redis is unreachable, and the server's ReplyError when CONFIG is
   * refused (renamed or denied by managed services).
   */
  async maxMemoryPolicy(): Promise<string | undefined> {
    const reply = (await this.run('CONFIG', () => this.redis.config('GET', 'maxmemory-policy'))) as unknown;
    if (!Array.isArray(reply)) return undefined;
    const i = reply.indexOf('maxmemory-policy');
    const value = i >= 0 ? reply[i + 1] : undefined;
    return typeof value === 'string' ? value : undefined;
  }

  private async sampleClock(): Promise<void> {
    const sentAt = Date.now();
    try {
      const [seconds, micros] = await this.redis.time();
      this.clock.observe(redisTimeMs(seconds, micros), sentAt, Date.now());
    } catch {
      // The next commit samples it again; until then the last estimate stands.
    }
  }

  async ping(): Promise<void> {
    await this.run('PING', () => this.redis.ping());
  }

  async close(): Promise<void> {
    // Nothing is pending once callers are done, so dropping the socket loses nothing (QUIT could wait).
    this.redis.disconnect();
  }

  /** Waits (boundedly) for a connection, runs `fn`, and maps failures to the contract's errors. */
  private async run<T>(key: string, fn: () => Promise<T>, timeoutMs = this.timeoutMs): Promise<T> {
    try {
      await this.whenReady();
      return await this.sent(fn, timeoutMs);
    } catch (err) {
      throw toStateError(err, key);
    }
  }

  /**
   * Calls `fn`, whose commands the wire sends synchronously, with `timeoutMs` as their reply timeout
   * (the wire reads `commandTimeoutMs` as each command is sent; it is put back at once).
   */
  private sent<T>(fn: () => Promise<T>, timeoutMs: number): Promise<T> {
    if (timeoutMs === this.timeoutMs) return fn();
    this.redis.commandTimeoutMs = timeoutMs;
    try {
      return fn();
    } finally {
      this.redis.commandTimeoutMs = this.timeoutMs;
    }
  }

  /** Resolves once connected; rejects after `timeoutMs`. Concurrent callers share one wait. */
  private whenReady(): Promise<void> {
    const redis = this.redis;
    if (redis.status === 'ready') return Promise.resolve();
    if (redis.status === 'end') return Promise.reject(new StateStoreUnavailableError('Redis state store is closed', undefined, true));
    if (redis.status === 'wait') redis.connect().catch(() => undefined); // first use (lazyConnect)
    this.readyWait ??= new Promise<void>((resolve, reject) => {
      const onReady = () => {
        redis.offReady(onReady);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        redis.offReady(onReady);
        reject(new StateStoreUnavailableError(`Redis is unavailable: not connected within ${this.timeoutMs} ms`, undefined, true));
      }, this.timeoutMs);
      redis.onReady(onReady);
    }).finally(() => {
      this.readyWait = undefined;
    });
    return this.readyWait;
  }
}
