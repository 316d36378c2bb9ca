/**
 * DynamoDB key schema: ONE table, string keys `pk` (partition) and `sk` (sort), no secondary index
 * (every read is a strongly consistent GetItem or Query on a key we can build).
 *
 *   item           pk                                sk                      attributes
 *   task header    T#<tenant>#TASK#<taskId>          HEADER                  version, inc, data (TaskRecord JSON),
 *                                                                            expiresAtMs?, childTtl?, ttl?,
 *                                                                            sessionPk, sessionSk, writeId?,
 *                                                                            leaseSk? (its lease entry's),
 *                                                                            archiveSk? (its archive entry's),
 *                                                                            splits (requests in parts, by
 *                                                                            seq: gen, parts; absent on
 *                                                                            headers of older releases)
 *   request        T#<tenant>#TASK#<taskId>          REQ#<seq, 6 digits>     data (RequestRecord JSON) or parts + gen,
 *                                                                            requestId, inc, ttl?
 *   request part   T#<tenant>#TASK#<taskId>          RPART#<seq>#<gen>#<i>   part (bytes of the JSON), inc, ttl?
 *                                                                            (dynamodb-parts.ts)
 *   stream log     T#<tenant>#TASK#<taskId>          EVT#<seq>#<first n>     data (events JSON), lastN, inc, ttl? (dynamodb-stream.ts)
 *   request index  T#<tenant>#REQ#<requestId>        REQUEST                 taskId, seq, inc, ttl?
 *   session index  T#<tenant>#O#<owner>#S#<session>  <createdAt>#<taskId>    taskId, inc, ttl?
 *   owner sessions T#<tenant>#O#<owner>#SESSIONS      <sessionId>             sessionId (no ttl: written by a
 *                                                                            task's create, deleted with the
 *                                                                            session's last task)
 *   idempotency    T#<tenant>#IDEM#<key>             IDEMPOTENCY             data (IdempotencyEntry JSON),
 *   entry                                                                    expiresAt (ms, the store's clock),
 *                                                                            ttl (dynamodb-idempotency.ts)
 *   lease entry    LEASES#<shard>                    <expiresAt ms, 15       tenantId, taskId, inc, leaseAt (the
 *                                                    digits>#<tenant>#<task> lease's exact expiresAt), taskExp?,
 *                                                                            ttl? (dynamodb-leases.ts)
 *   archive entry  ARCHIVE#<shard>                   <changedAt ms, 15       tenantId, taskId, version, changedAt,
 *                                                    digits>#<tenant>#<task> inc, taskExp?, ttl? (dynamodb-archive.ts;
 *                                                                            only with the archiveIndex option)
 *
 * - The tenant leads every partition key, so a key of another tenant cannot be built; the lease
 *   and archive indexes alone are shared (StateStore.listLapsedLeases and listUnarchived, the reads
 *   across tenants): their entries name a tenant and a task and hold nothing of theirs. Each id is percent-encoded, so an id
 *   containing `#` cannot forge another key.
 * - `inc` (incarnation) is a random id fixed when a task is created. A task id re-created over an
 *   expired task gets a new one, and reads ignore the old incarnation's leftover items.
 * - `data` holds the record as one JSON string: it round-trips exactly (no marshalling of
 *   undefined or empty values), and a record that fails to parse can be reported as corrupt.
 * - `ttl` (epoch seconds) is the table's TTL attribute. Headers and idempotency entries carry the
 *   exact expiry; the other items carry the `childTtl` horizon (see ttl-horizon.util.ts). DynamoDB
 *   deletes lazily (and DynamoDB Local never), so reads always filter on `expiresAt`.
 * - An idempotency entry (StateStore.getIdempotencyEntry) has a partition of its own, not its
 *   task's: the commit that claims its key puts it in the commit's transaction (over an expired
 *   entry left there), and nothing else writes or deletes it (the deletion of the task leaves it):
 *   it lives until its `ttl`.
 * - The session sort key orders an owner's tasks oldest first and is the paging position.
 */
export const HEADER_SK = 'HEADER';
export const REQUEST_INDEX_SK = 'REQUEST';

const enc = encodeURIComponent;

export function taskPk(tenantId: string, taskId: string): string {
  return `T#${enc(tenantId)}#TASK#${enc(taskId)}`;
}

export function requestSk(seq: number): string {
  return `REQ#${String(seq).padStart(6, '0')}`;
}

/**
 * The sort key of part `i` of generation `gen` of request `seq`. Parts sort after every `REQ#`
 * item (below REQUESTS_END), so reading a task's requests, or deleting them, never pages through
 * them: they are read or deleted by the keys their request item names.
 */
export function requestPartSk(seq: number, gen: string, i: number): string {
  return `${PART_PREFIX}${String(seq).padStart(6, '0')}#${gen}#${String(i).padStart(5, '0')}`;
}

export const PART_PREFIX = 'RPART#';

/** Above every request's sort key (`REQ#...`) and below every part's: a Query bound. */
export const REQUESTS_END = 'REQ$';

export function requestIndexPk(tenantId: string, requestId: string): string {
  return `T#${enc(tenantId)}#REQ#${enc(requestId)}`;
}

export const IDEMPOTENCY_SK = 'IDEMPOTENCY';

/** The partition of the entry of an Idempotency-Key (its `key`, a digest: IdempotencyEntry.key). */
export function idempotencyPk(tenantId: string, key: string): string {
  return `T#${enc(tenantId)}#IDEM#${enc(key)}`;
}

export function sessionPk(tenantId: string, ownerId: string, sessionId: string): string {
  return `T#${enc(tenantId)}#O#${enc(ownerId)}#S#${enc(sessionId)}`;
}

export function ownerSessionsPk(tenantId: string, ownerId: string): string {
  return `T#${enc(tenantId)}#O#${enc(ownerId)}#SESSIONS`;
}

/** Every partition key of a tenant starts with this (tests count what a tenant holds). */
export function tenantPkPrefix(tenantId: string): string {
  return `T#${enc(tenantId)}#`;
}

export function sessionSk(createdAt: string, taskId: string): string {
  return `${createdAt}#${enc(taskId)}`;
}

/**
 * The lease index is spread over this many partitions (by a hash of tenant and task), so the
 * writes of every running request in the deployment do not all land on one partition.
 */
export const LEASE_SHARDS = 8;

export function leasePk(shard: number): string {
  return `LEASES#${shard}`;
}

/** The partition of a task's lease entry (FNV-1a of tenant and task id). */
export function leaseShard(tenantId: string, taskId: string): number {
  let h = 0x811c9dc5;
  for (const c of `${tenantId}\u0000${taskId}`) h = Math.imul(h ^ c.codePointAt(0)!, 0x01000193);
  return (h >>> 0) % LEASE_SHARDS;
}

/** A lease entry's sort key: by the whole millisecond it lapses, then tenant and task. */
export function leaseSk(expiresAt: number, tenantId: string, taskId: string): string {
  return `${leaseInstant(expiresAt)}#${enc(tenantId)}#${enc(taskId)}`;
}

/** Above every lease entry's sort key that lapses in the millisecond of `at` or earlier (a Query bound). */
export function leaseSkUpTo(at: number): string {
  return `${leaseInstant(at)}$`;
}

function leaseInstant(ms: number): string {
  return String(Math.max(0, Math.floor(ms))).padStart(15, '0');
}

/** The archive index is spread over as many partitions as the lease index, by the same hash. */
export const ARCHIVE_SHARDS = LEASE_SHARDS;

export function archivePk(shard: number): string {
  return `ARCHIVE#${shard}`;
}

/** An archive entry's sort key: by the whole millisecond of the change, then tenant and task (as a lease entry's). */
export const archiveSk = leaseSk;

/** Above every archive entry's sort key changed in the millisecond of `at` or earlier (a Query bound). */
export const archiveSkUpTo = leaseSkUpTo;

/** The key of an item, for error messages and raw access. */
export function itemName(key: { pk: string; sk: string }): string {
  return `${key.pk} / ${key.sk}`;
}
