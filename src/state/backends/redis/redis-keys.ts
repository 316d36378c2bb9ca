/**
 * Redis key layout (every key carries the tenant, so no key of another tenant can ever be built):
 *
 *   {prefix}{<tenant>}:task:<taskId>              hash    v (version), exp (expiresAt ms or ''),
 *                                                         ttl (horizon ms or ''), data (TaskRecord JSON)
 *   {prefix}{<tenant>}:task:<taskId>:requests     hash    <seq> → RequestRecord JSON, one field per request
 *   {prefix}{<tenant>}:task:<taskId>:request-ids  set     the task's request ids (to expire or drop their index keys)
 *   {prefix}{<tenant>}:task:<taskId>:stream       list    the stream log of the latest streamed request
 *                                                         (redis-stream.lua.ts), expiring with the task
 *   {prefix}{<tenant>}:request:<requestId>        string  {"taskId","seq"}: the request-id index
 *   {prefix}{<tenant>}:session:<owner>:<session>  zset    task ids, scored by creation order
 *   {prefix}{<tenant>}:sessions:<owner>           zset    the owner's session ids (score 0, in lexical order);
 *                                                         added by the create commit, removed by the deletion
 *                                                         of the session's last task (redis-delete.lua.ts)
 *   {prefix}{<tenant>}:idem:<key>                 string  an Idempotency-Key's entry (IdempotencyEntry JSON),
 *                                                         written by the commit that claims it, expiring at its
 *                                                         expiresAt (PXAT): Redis removes it, the task's deletion
 *                                                         and expiry leave it (redis-idempotency.ts)
 *   {prefix}leases                                zset    the lease index (StateStore.listLapsedLeases): the
 *                                                         header key of each task holding a lease, scored by
 *                                                         the lease's expiresAt; kept by the commit script
 *   {prefix}archive                               zset    the archive index (StateStore.listUnarchived), kept
 *                                                         only with the store's archiveIndex option: the
 *                                                         header key of each task committed since the archive
 *                                                         took it, scored by the server's time of its last
 *                                                         commit in microseconds (its listed version is the
 *                                                         header's `v`); written by the commit script, removed
 *                                                         by markArchived (redis-archive.lua.ts) and by the
 *                                                         deletion's last step
 *
 * `{<tenant>}` is a Redis Cluster hash tag: all keys of one tenant live in one slot, so the commit
 * script may touch any of them atomically. The lease and archive indexes are the keys of no tenant:
 * the commit script writes them beside the tenant's keys, which a single Redis node (what the store
 * connects to) allows; their members are header keys, so they name tenants and task ids and hold
 * nothing of theirs. Every variable part is percent-encoded, so an id that contains `:`, `{` or `}`
 * can neither collide with another key nor move the hash tag; for the same
 * reason the prefix must not contain `{`.
 */
export class RedisKeys {
  private readonly base: string;

  constructor(prefix: string, tenantId: string) {
    if (prefix.includes('{')) throw new TypeError('Redis key prefix must not contain "{" (it would become the hash tag)');
    this.base = `${prefix}{${enc(tenantId)}}:`;
  }

  task(taskId: string): string {
    return `${this.base}task:${enc(taskId)}`;
  }

  requests(taskId: string): string {
    return `${this.task(taskId)}:requests`;
  }

  stream(taskId: string): string {
    return `${this.task(taskId)}:stream`;
  }

  requestIds(taskId: string): string {
    return `${this.task(taskId)}:request-ids`;
  }

  /** The request-id index key is `requestIndexPrefix + encoded id` (the commit script builds it too). */
  get requestIndexPrefix(): string {
    return `${this.base}request:`;
  }

  requestIndex(requestId: string): string {
    return this.requestIndexPrefix + enc(requestId);
  }

  /** An Idempotency-Key's entry (StateStore.getIdempotencyEntry): a key of the tenant, apart from its tasks. */
  idempotency(key: string): string {
    return `${this.base}idem:${enc(key)}`;
  }

  ownerSessions(ownerId: string): string {
    return `${this.base}sessions:${enc(ownerId)}`;
  }

  /** Every key of the tenant matches this SCAN pattern (tests count what a tenant holds). */
  get tenantPattern(): string {
    return `${this.base.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
  }

  session(ownerId: string, sessionId: string): string {
    return `${this.base}session:${enc(ownerId)}:${enc(sessionId)}`;
  }
}

/** The lease index of the store under `prefix` (see the layout above). */
export function leaseIndexKey(prefix: string): string {
  return `${prefix}leases`;
}

/** The archive index of the store under `prefix` (see the layout above). */
export function archiveIndexKey(prefix: string): string {
  return `${prefix}archive`;
}

/** The tenant and task of a header key (a lease or archive index member); undefined for any other key. */
export function parseTaskKey(prefix: string, key: string): { tenantId: string; taskId: string } | undefined {
  const match = /^\{([^{}]*)\}:task:([^:]*)$/.exec(key.startsWith(prefix) ? key.slice(prefix.length) : '');
  return match ? { tenantId: decodeURIComponent(match[1]), taskId: decodeURIComponent(match[2]) } : undefined;
}

/** The characters encodeURIComponent leaves as they are (less `!*'()`, which are rare in ids). */
const UNRESERVED = /^[A-Za-z0-9_.~-]*$/;

/**
 * Encodes one key part; also used for request ids stored in the request-ids set. An id made of
 * unreserved characters only (a UUID) is its own encoding: tested, not encoded again (a commit
 * encodes about ten parts; encodeURIComponent costs ~3x the test; issue 27).
 */
export function enc(part: string): string {
  return UNRESERVED.test(part) ? part : encodeURIComponent(part);
}
