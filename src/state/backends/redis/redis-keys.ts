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
 *
 * `{<tenant>}` is a Redis Cluster hash tag: all keys of one tenant live in one slot, so the commit
 * script may touch any of them atomically. Every variable part is percent-encoded, so an id that
 * contains `:`, `{` or `}` can neither collide with another key nor move the hash tag; for the same
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

/** Encodes one key part; also used for request ids stored in the request-ids set. */
export function enc(part: string): string {
  return encodeURIComponent(part);
}
