import Redis from 'ioredis';
import { LeaseEntry, Page, StateStore, StreamEvent, TaskWrite } from '../../state-store';
import { RequestRecord, TaskRecord } from '../../state.entities';
import { StateCorruptError, StateStoreUnavailableError, VersionConflictError } from '../../state.errors';
import { StoreClock } from '../../store-clock';
import { isExpired } from '../../state-store.util';
import { pageLiveEntries } from '../live-page.util';
import { expiresAtMs, ttlHorizon } from '../ttl-horizon.util';
import { COMMIT_LUA } from './redis-commit.lua';
import { DELETE_BATCH_LUA } from './redis-delete.lua';
import { LEASES_LUA } from './redis-leases.lua';
import { STREAM_APPEND_LUA } from './redis-stream.lua';
import { resultsOf, toStateError } from './redis-errors';
import { enc, leaseIndexKey, parseTaskKey, RedisKeys } from './redis-keys';

// The key layout is documented in redis-keys.ts, the commit in redis-commit.lua.ts.

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
}

type CommitReply = ['ok', string, string] | ['conflict', number] | ['corrupt', string];

/**
 * How far two replicas' estimates of the Redis clock may disagree: `TIME` is exact to the
 * microsecond, so each estimate is off by at most half a round trip (docs/api.md, "Leases and clocks").
 */
export const REDIS_CLOCK_SKEW_MS = 250;

/**
 * Request records are unbounded (an answer is stored whatever its size), so calls that carry them
 * wait longer than `timeoutMs` for their reply: a commit `timeoutMs` more per MiB it sends, a read
 * of request records READ_RECORDS_TIMEOUT_FACTOR × `timeoutMs` (its size is known only once read).
 * A stalled Redis still fails them within a bounded time.
 */
export const READ_RECORDS_TIMEOUT_FACTOR = 2;
const MIB = 1024 * 1024;
const bulkTimeout = (timeoutMs: number, bytes: number) => timeoutMs * (1 + Math.floor(bytes / MIB));
type WithCommit = Redis & {
  taCommit(numKeys: number, ...args: (string | number)[]): Promise<CommitReply>;
  taDeleteBatch(numKeys: number, ...args: (string | number)[]): Promise<'gone' | 'changed' | 'more' | 'done'>;
  taStreamAppend(numKeys: number, ...args: (string | number)[]): Promise<number>;
  taLeases(numKeys: number, ...args: (string | number)[]): Promise<[(string | number)[], number]>;
};

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
  private readonly redis: WithCommit;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readyWait?: Promise<void>;
  /** Scripts of other parts (runScript), by text → the command defined for them. */
  private readonly scripts = new Map<string, string>();
  /** The Redis server's clock (`TIME`): sampled on every connect and by every commit. */
  private readonly clock = new StoreClock({ resolutionMs: 0.001 });
  override readonly clockSkewMs = REDIS_CLOCK_SKEW_MS;

  constructor(options: RedisStateStoreOptions) {
    super();
    this.prefix = options.keyPrefix ?? 'ta:';
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.redis = new Redis(options.url, {
      connectTimeout: this.timeoutMs,
      commandTimeout: this.timeoutMs,
      // Commands are never queued while disconnected (a queued commit could run long after its caller
      // was told it failed); whenReady() waits, boundedly, for the connection instead.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Keep reconnecting, quickly, for as long as the store lives: Redis coming back must heal it.
      retryStrategy: (times) => Math.min(times * 100, 1000),
      lazyConnect: true,
    }) as WithCommit;
    // Without a listener ioredis prints every connection error to stderr; failures surface per call.
    this.redis.on('error', () => undefined);
    // Sent ahead of whatever waits for the connection, so the first decision already has the clock.
    this.redis.on('ready', () => void this.sampleClock());
    this.redis.defineCommand('taCommit', { lua: COMMIT_LUA });
    this.redis.defineCommand('taDeleteBatch', { lua: DELETE_BATCH_LUA });
    this.redis.defineCommand('taStreamAppend', { lua: STREAM_APPEND_LUA });
    this.redis.defineCommand('taLeases', { lua: LEASES_LUA });
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
    let name = this.scripts.get(lua);
    if (!name) {
      name = `taScript${this.scripts.size}`;
      this.redis.defineCommand(name, { lua });
      this.scripts.set(lua, name);
    }
    const command = name;
    const redis = this.redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>;
    return this.run(keys[0] ?? command, () => redis[command](keys.length, ...keys, ...args));
  }

  private keys(tenantId: string): RedisKeys {
    return new RedisKeys(this.prefix, tenantId);
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    const key = this.keys(tenantId).task(taskId);
    return this.run(key, async () => liveTask(key, await this.redis.hget(key, 'data'), this.now()));
  }

  async getTaskForDeletion(tenantId: string, taskId: string): Promise<TaskRecord | undefined> {
    const key = this.keys(tenantId).task(taskId);
    return this.run(key, async () => liveTask(key, await this.redis.hget(key, 'data'), this.now(), true));
  }

  async deleteTaskBatch(tenantId: string, taskId: string, batchSize: number): Promise<boolean> {
    const task = await this.getTaskForDeletion(tenantId, taskId);
    if (!task) return true;
    if (task.deletingAt === undefined) return true;
    const k = this.keys(tenantId);
    const keys = [k.task(taskId), k.requests(taskId), k.requestIds(taskId), k.session(task.ownerId, task.sessionId), k.ownerSessions(task.ownerId), k.stream(taskId)];
    const args = [task.version, Math.max(1, Math.floor(batchSize)), k.requestIndexPrefix, taskId, task.sessionId, task.writeId ?? ''];
    const reply = await this.run(keys[0], () => this.redis.taDeleteBatch(keys.length, ...keys, ...args));
    // 'changed': the marked header is gone and the id holds another task since.
    return reply !== 'more';
  }

  override async appendStreamEvents(tenantId: string, taskId: string, seq: number, events: StreamEvent[], requestId?: string): Promise<void> {
    if (!events.length) return;
    const k = this.keys(tenantId);
    // The request-ids set holds the members as the commit script adds them (encoded).
    const args: (string | number)[] = [seq, requestId === undefined ? '' : enc(requestId)];
    for (const e of events) args.push(e.n, JSON.stringify({ s: seq, n: e.n, e: e.event, d: e.data }));
    await this.run(k.task(taskId), () => this.redis.taStreamAppend(3, k.task(taskId), k.stream(taskId), k.requestIds(taskId), ...args));
  }

  override async readStreamEvents(tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
    const k = this.keys(tenantId);
    const key = k.task(taskId);
    return this.run(key, async () => {
      const [data, entries] = resultsOf(await this.redis.multi().hget(key, 'data').lrange(k.stream(taskId), 0, -1).exec(), key);
      if (!liveTask(key, data as string | null, this.now())) return [];
      return (entries as string[])
        .map((json) => parseRecord<{ s: number; n: number; e: string; d: Record<string, unknown> }>(k.stream(taskId), json))
        .filter((x) => x.s === seq && x.n > after)
        .map((x) => ({ n: x.n, event: x.e, data: x.d }));
    });
  }

  async listOwnerSessions(tenantId: string, ownerId: string, page: { limit: number; cursor?: string }): Promise<Page<string>> {
    const k = this.keys(tenantId);
    const key = k.ownerSessions(ownerId);
    return this.run(key, () =>
      pageLiveEntries(page, async (after, count) => {
        const ids = await this.redis.zrangebylex(key, after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, count);
        const pipeline = this.redis.pipeline();
        for (const id of ids) pipeline.exists(k.session(ownerId, id));
        const exists = ids.length ? resultsOf(await pipeline.exec(), key) : [];
        // A session whose index expired with its tasks is dead.
        return { entries: ids.map((id, i) => ({ position: id, item: exists[i] ? id : undefined })), more: ids.length === count };
      }),
    );
  }

  async listRequests(tenantId: string, taskId: string): Promise<RequestRecord[]> {
    const k = this.keys(tenantId);
    const key = k.task(taskId);
    return this.run(key, async () => {
      // One MULTI: the header and its requests are read as one snapshot.
      const [data, fields] = resultsOf(await this.redis.multi().hget(key, 'data').hgetall(k.requests(taskId)).exec(), key);
      if (!liveTask(key, data as string | null, this.now())) return [];
      return Object.entries(fields as Record<string, string>)
        .map(([seq, json]) => parseRecord<RequestRecord>(`${k.requests(taskId)}#${seq}`, json))
        .sort((a, b) => a.seq - b.seq);
    }, this.timeoutMs * READ_RECORDS_TIMEOUT_FACTOR);
  }

  async getRequest(tenantId: string, requestId: string): Promise<RequestRecord | undefined> {
    const k = this.keys(tenantId);
    const indexKey = k.requestIndex(requestId);
    return this.run(indexKey, async () => {
      const ref = await this.redis.get(indexKey);
      if (ref === null) return undefined;
      const { taskId, seq } = parseRecord<{ taskId: string; seq: number }>(indexKey, ref);
      const key = k.task(taskId);
      const read = () => this.redis.multi().hget(key, 'data').hget(k.requests(taskId), String(seq)).exec();
      const [data, json] = resultsOf(await this.sent(read, this.timeoutMs * READ_RECORDS_TIMEOUT_FACTOR), key);
      if (!liveTask(key, data as string | null, this.now()) || json === null) return undefined;
      const record = parseRecord<RequestRecord>(`${k.requests(taskId)}#${seq}`, json as string);
      // The seq may since have been replaced by another request (a re-created task).
      return record.requestId === requestId ? record : undefined;
    });
  }

  async listSessionTasks(
    tenantId: string,
    ownerId: string,
    sessionId: string,
    page: { limit: number; cursor?: string; includeDeleting?: boolean },
  ): Promise<Page<TaskRecord>> {
    const k = this.keys(tenantId);
    const sessionKey = k.session(ownerId, sessionId);
    return this.run(sessionKey, () =>
      pageLiveEntries(page, async (after, count) => {
        const min = after && /^\d+$/.test(after) ? `(${after}` : '-inf';
        const flat = await this.redis.zrangebyscore(sessionKey, min, '+inf', 'WITHSCORES', 'LIMIT', 0, count);
        const ids = flat.filter((_, i) => i % 2 === 0);
        const pipeline = this.redis.pipeline();
        for (const id of ids) pipeline.hget(k.task(id), 'data');
        const headers = ids.length ? resultsOf(await pipeline.exec(), sessionKey) : [];
        const entries = ids.map((id, i) => {
          const task = liveTask(k.task(id), headers[i] as string | null, this.now(), page.includeDeleting);
          // A re-created task id may now belong to another session: it is not this one's.
          const mine = task && task.ownerId === ownerId && task.sessionId === sessionId ? task : undefined;
          return { position: flat[i * 2 + 1], item: mine };
        });
        return { entries, more: ids.length === count };
      }),
    );
  }

  override now(): number {
    return this.clock.now();
  }

  /** The lease index's entries (redis-leases.lua.ts), paged by their (score, member) position. */
  async listLapsedLeases(before: number, page: { limit: number; cursor?: string }): Promise<Page<LeaseEntry>> {
    const key = leaseIndexKey(this.prefix);
    return this.run(key, () =>
      pageLiveEntries(page, async (after, count) => {
        const [score, member] = after === undefined ? ['', ''] : splitPosition(after);
        const [flat, more] = await this.redis.taLeases(1, key, before, count, score, member, this.now());
        const entries = [];
        for (let i = 0; i < flat.length; i += 3) {
          const [m, s, alive] = [String(flat[i]), String(flat[i + 1]), flat[i + 2] === 1];
          const ids = parseTaskKey(this.prefix, m);
          entries.push({ position: `${s}\u0000${m}`, item: alive && ids ? { ...ids, expiresAt: Number(s) } : undefined });
        }
        return { entries, more: more === 1 };
      }),
    );
  }

  async commit(tenantId: string, write: TaskWrite): Promise<TaskRecord> {
    const k = this.keys(tenantId);
    const { taskId } = write.task;
    const stored: TaskRecord = { ...write.task, tenantId, version: write.expectedVersion + 1 };
    const json = JSON.stringify(stored);
    const now = this.now();
    const exp = expiresAtMs(stored.expiresAt);
    const requests = (write.requests ?? []).map((r) => ({ ...r, tenantId }));
    const keys = [
      k.task(taskId),
      k.requests(taskId),
      k.requestIds(taskId),
      k.session(stored.ownerId, stored.sessionId),
      leaseIndexKey(this.prefix),
      ...requests.map((r) => k.requestIndex(r.requestId)),
    ];
    const args = [
      write.expectedVersion,
      now,
      exp ?? '',
      json,
      taskId,
      k.requestIndexPrefix,
      exp === undefined ? '' : ttlHorizon(exp, now),
      k.ownerSessions(stored.ownerId),
      stored.sessionId,
      write.expectedWriteId ?? '',
      stored.writeId ?? '',
      stored.lease ? stored.lease.expiresAt : '',
      ...requests.flatMap((r) => [r.seq, enc(r.requestId), JSON.stringify(r), JSON.stringify({ taskId, seq: r.seq })]),
    ];
    const sentAt = Date.now();
    const bytes = args.reduce<number>((sum, a) => sum + (typeof a === 'string' ? a.length : 8), 0);
    const reply = await this.run(keys[0], () => this.redis.taCommit(keys.length, ...keys, ...args), bulkTimeout(this.timeoutMs, bytes));
    if (reply[0] === 'ok') this.clock.observe(redisTimeMs(reply[1], reply[2]), sentAt, Date.now());
    if (reply[0] === 'conflict') throw new VersionConflictError(taskId, write.expectedVersion, Number(reply[1]));
    if (reply[0] === 'corrupt') throw new StateCorruptError(String(reply[1]));
    return JSON.parse(json) as TaskRecord;
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
   * Calls `fn`, whose commands ioredis sends synchronously, with `timeoutMs` as their reply timeout
   * (ioredis reads `commandTimeout` as each command is sent; the one option is put back at once).
   */
  private sent<T>(fn: () => Promise<T>, timeoutMs: number): Promise<T> {
    if (timeoutMs === this.timeoutMs) return fn();
    const options = this.redis.options;
    options.commandTimeout = timeoutMs;
    try {
      return fn();
    } finally {
      options.commandTimeout = this.timeoutMs;
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
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        redis.off('ready', onReady);
        reject(new StateStoreUnavailableError(`Redis is unavailable: not connected within ${this.timeoutMs} ms`, undefined, true));
      }, this.timeoutMs);
      redis.once('ready', onReady);
    }).finally(() => {
      this.readyWait = undefined;
    });
    return this.readyWait;
  }
}

/** A lease index position (`{score}\0{member}`) as the script's two arguments. */
function splitPosition(position: string): [string, string] {
  const at = position.indexOf('\u0000');
  return at < 0 ? ['', ''] : [position.slice(0, at), position.slice(at + 1)];
}

/** Redis `TIME` (seconds, microseconds) as epoch milliseconds. */
function redisTimeMs(seconds: string | number, micros: string | number): number {
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

/** Parses a stored header; undefined when absent or expired, or marked for deletion (unless `deleting`). */
function liveTask(key: string, data: string | null, now: number, deleting = false): TaskRecord | undefined {
  if (data === null) return undefined;
  const task = parseRecord<TaskRecord>(key, data);
  return isExpired(task, now) || (!deleting && task.deletingAt !== undefined) ? undefined : task;
}

/** JSON that is not an object is corrupt: the error names the key and nothing is changed. */
function parseRecord<T>(key: string, text: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new StateCorruptError(key, err);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StateCorruptError(key);
  return value as T;
}
