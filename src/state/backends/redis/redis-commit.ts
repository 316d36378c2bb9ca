import { TaskWrite } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { IdempotencyKeyTakenError, StateCorruptError, VersionConflictError } from '../../state.errors';
import { expiresAtMs, ttlHorizon } from '../ttl-horizon.util';
import { frozenOwn, wakeAt } from '../../state-store.util';
import { bulkTimeout, CommitReply, RedisContext, redisTimeMs } from './redis-context';
import { COMMIT_LUA } from './redis-commit.lua';
import { parseEntry } from './redis-idempotency';
import { archiveIndexKey, enc, leaseIndexKey } from './redis-keys';
import { RedisScript } from './redis-wire';

/**
 * The commit (StateStore.commit): the keys and arguments of redis-commit.lua.ts, which checks the
 * version and writes everything in one step, and its reply as the contract's outcome. The reply of
 * an applied commit carries the server's clock, which keeps the store's estimate of it fresh.
 * A claimed Idempotency-Key (TaskWrite.idempotency) is one more key and two arguments; without one
 * the header stands in for the key, and the script does nothing more.
 *
 * Sent as EVALSHA, EVAL when the server answers NOSCRIPT (RedisWire.runScript), both with the
 * commit's reply timeout: longer by the size it carries (bulkTimeout).
 */
export async function commitTask(ctx: RedisContext, tenantId: string, write: TaskWrite): Promise<TaskRecord> {
  const k = ctx.keys(tenantId);
  const { taskId } = write.task;
  const stored: TaskRecord = { ...write.task, tenantId, version: write.expectedVersion + 1 };
  const json = JSON.stringify(stored);
  const now = ctx.now();
  const exp = expiresAtMs(stored.expiresAt);
  // Sealed by the task writer, a record carries its tenant already: copied only when it does not.
  const requests = (write.requests ?? []).map((r) => (r.tenantId === tenantId ? r : { ...r, tenantId }));
  const claim = write.idempotency;
  const keys = [
    k.task(taskId),
    k.requests(taskId),
    k.requestIds(taskId),
    k.session(stored.ownerId, stored.sessionId),
    leaseIndexKey(ctx.prefix),
    archiveIndexKey(ctx.prefix),
    claim ? k.idempotency(claim.key) : k.task(taskId),
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
    wakeAt(stored) ?? '',
    ctx.archiveIndex ? '1' : '',
    claim ? JSON.stringify(claim) : '',
    // PXAT takes whole ms: rounded up, Redis never removes an entry before it has expired.
    claim ? Math.ceil(claim.expiresAt) : '',
    ...requests.flatMap((r, i) => [r.seq, enc(r.requestId), write.requestJson?.[i] ?? JSON.stringify(r), JSON.stringify({ taskId, seq: r.seq })]),
  ];
  const sentAt = Date.now();
  const bytes = args.reduce<number>((sum, a) => sum + (typeof a === 'string' ? a.length : 8), 0);
  const timeoutMs = bulkTimeout(ctx.timeoutMs, bytes);
  const reply = (await ctx.run(keys[0], () => ctx.redis.runScript(COMMIT, keys.length, ...keys, ...args), timeoutMs)) as CommitReply;
  if (reply[0] === 'ok') ctx.clock.observe(redisTimeMs(reply[1], reply[2]), sentAt, Date.now());
  if (reply[0] === 'conflict') throw new VersionConflictError(taskId, write.expectedVersion, Number(reply[1]));
  if (reply[0] === 'corrupt') throw new StateCorruptError(String(reply[1]));
  if (reply[0] === 'taken') throw new IdempotencyKeyTakenError(parseEntry(keys[6], reply[1]));
  // What was stored, deep-frozen (as the memory store returns it), not parsed back from its JSON:
  // parts the task was built from that are frozen already are shared, and the writer's cache keeps
  // the record as it is instead of copying it once more.
  return frozenOwn(stored);
}

/** The commit script and the SHA-1 by which Redis knows it once it has run it (EVALSHA). */
const COMMIT = new RedisScript(COMMIT_LUA);
