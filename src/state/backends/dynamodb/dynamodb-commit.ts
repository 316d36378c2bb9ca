import { AttributeValue } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { TaskWrite } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { expiresAtMs } from '../ttl-horizon.util';
import { RequestLayout, requestItemBody, Splits } from './dynamodb-parts';
import { ChildTtlPlan } from './dynamodb-ttl';
import { HEADER_SK, leasePk, leaseShard, leaseSk, ownerSessionsPk, REQUEST_INDEX_SK, requestIndexPk, requestSk, sessionPk, sessionSk, taskPk } from './dynamodb-keys';

/** DynamoDB allows 100 items per transaction: the header, two per request, and the session entry. */
export const MAX_REQUESTS_PER_COMMIT = 49;
/** A commit that stores a lease also puts its lease entry and may delete the one it replaces. */
export const MAX_REQUESTS_PER_LEASE_COMMIT = 48;

/**
 * The header state a commit builds on and its condition pins: as the commit read it (consistent
 * read), or as this process last wrote or read it (dynamodb-header-cache.ts).
 */
export interface HeaderSnapshot {
  version: number;
  inc: string;
  expiresAtMs?: number;
  childTtl?: number;
  sessionPk: string;
  sessionSk: string;
  /** The writeId of the write that stored it (TaskRecord.writeId), if it had one. */
  writeId?: string;
  /** Its requests stored in parts; undefined for a header written before headers recorded them. */
  splits?: Splits;
  /** The sort key of its lease entry (dynamodb-leases.ts) while it holds a lease. */
  leaseSk?: string;
}

/** The snapshot of a header item, given its parsed record. */
export function snapshotOf(item: Record<string, unknown>, task: TaskRecord): HeaderSnapshot {
  const legacy = item.splits === undefined;
  return {
    version: Number(item.version),
    inc: String(item.inc),
    expiresAtMs: item.expiresAtMs === undefined ? undefined : Number(item.expiresAtMs),
    childTtl: item.childTtl === undefined ? undefined : Number(item.childTtl),
    sessionPk: String(item.sessionPk),
    sessionSk: String(item.sessionSk),
    // An older header kept its writeId only inside `data`.
    writeId: legacy ? task.writeId : typeof item.writeId === 'string' ? item.writeId : undefined,
    splits: legacy ? undefined : (item.splits as Splits),
    leaseSk: typeof item.leaseSk === 'string' ? item.leaseSk : undefined,
  };
}

export function isLive(header: HeaderSnapshot | undefined, now: number): header is HeaderSnapshot {
  return header !== undefined && (header.expiresAtMs === undefined || header.expiresAtMs > now);
}

/**
 * The transaction of one commit. The header Put is conditioned on exactly the header state the
 * commit builds on (its version and incarnation, and writeId when the write expects one; or its
 * absence), so the commit applies only on top of that state, and a cancelled transaction writes
 * nothing. `layout` is the task's incarnation (a new one for a create), how each request is stored
 * (dynamodb-parts.ts: split ones have their parts written before, and the request item here is what
 * makes them visible) and the header's splits once they are. `snapshot` is the header it writes.
 */
export function buildCommit(
  table: string,
  tenantId: string,
  write: TaskWrite,
  current: HeaderSnapshot | undefined,
  ttl: ChildTtlPlan,
  now: number,
  layout: { inc: string; requests: RequestLayout[]; splits: Splits },
): { input: TransactWriteCommandInput; json: string; snapshot: HeaderSnapshot; ownerSession?: Record<string, unknown> } {
  const { taskId } = write.task;
  const live = isLive(current, now);
  const stored: TaskRecord = { ...write.task, tenantId, version: write.expectedVersion + 1 };
  const json = JSON.stringify(stored);
  const exp = expiresAtMs(stored.expiresAt);
  const { inc } = layout;
  const session = live
    ? { pk: current.sessionPk, sk: current.sessionSk }
    : { pk: sessionPk(tenantId, stored.ownerId, stored.sessionId), sk: sessionSk(stored.createdAt, taskId) };
  const pk = taskPk(tenantId, taskId);
  const childTtl = ttl.childTtl === undefined ? {} : { ttl: ttl.childTtl };
  const lease = leaseIndexWrites(table, tenantId, stored, live ? current : undefined, inc, exp);

  const header = {
    Put: {
      TableName: table,
      Item: {
        pk,
        sk: HEADER_SK,
        version: stored.version,
        inc,
        data: json,
        sessionPk: session.pk,
        sessionSk: session.sk,
        splits: layout.splits,
        ...(stored.writeId === undefined ? {} : { writeId: stored.writeId }),
        ...(lease.sk === undefined ? {} : { leaseSk: lease.sk }),
        ...(exp === undefined ? {} : { expiresAtMs: exp, ttl: Math.ceil(exp / 1000) }),
        ...(ttl.childTtl === undefined ? {} : { childTtl: ttl.childTtl }),
      },
      ...headerCondition(current, live, now, write.expectedWriteId),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    },
  };
  const put = (Item: Record<string, unknown>) => ({ Put: { TableName: table, Item: { ...Item, inc, ...childTtl } } });
  const requests = layout.requests.flatMap((r) => [
    put({ pk, sk: requestSk(r.seq), ...requestItemBody(r), requestId: r.requestId }),
    put({ pk: requestIndexPk(tenantId, r.requestId), sk: REQUEST_INDEX_SK, taskId, seq: r.seq }),
  ]);
  const sessionEntry = live ? [] : [put({ ...session, taskId })];
  const items = [header, ...requests, ...sessionEntry, ...lease.items];
  const snapshot: HeaderSnapshot = {
    version: stored.version,
    inc,
    expiresAtMs: exp,
    childTtl: ttl.childTtl,
    sessionPk: session.pk,
    sessionSk: session.sk,
    writeId: stored.writeId,
    splits: layout.splits,
    leaseSk: lease.sk,
  };
  if (live) return { input: { TransactItems: items }, json, snapshot };
  // A create also lists the session under its owner: in the transaction when it fits, else (a
  // create of 49 requests) written by the caller just before it (idempotent, and harmless if the
  // create then loses: a listed session without tasks is skipped).
  const ownerSession = { pk: ownerSessionsPk(tenantId, stored.ownerId), sk: stored.sessionId, sessionId: stored.sessionId };
  if (items.length < 100) return { input: { TransactItems: [...items, { Put: { TableName: table, Item: ownerSession } }] }, json, snapshot };
  return { input: { TransactItems: items }, json, snapshot, ownerSession };
}

/**
 * The lease index follows the header (StateStore.listLapsedLeases): while the task holds a lease
 * its entry is put with every commit (it carries the task's expiry, by which a listing tells an
 * entry of an expired task), and the entry of the lease it replaces or releases is deleted. An
 * expired incarnation's entry (`current` undefined on a re-create) is left for the listing, which
 * drops it by its own expiry: it never names the new incarnation.
 */
function leaseIndexWrites(table: string, tenantId: string, stored: TaskRecord, current: HeaderSnapshot | undefined, inc: string, exp: number | undefined) {
  const { taskId } = stored;
  const pk = leasePk(leaseShard(tenantId, taskId));
  const sk = stored.lease ? leaseSk(stored.lease.expiresAt, tenantId, taskId) : undefined;
  const items: NonNullable<TransactWriteCommandInput['TransactItems']> = [];
  if (current?.leaseSk !== undefined && current.leaseSk !== sk) items.push({ Delete: { TableName: table, Key: { pk, sk: current.leaseSk } } });
  if (stored.lease && sk !== undefined) {
    const expiry = exp === undefined ? {} : { taskExp: exp, ttl: Math.ceil(exp / 1000) };
    items.push({ Put: { TableName: table, Item: { pk, sk, tenantId, taskId, inc, leaseAt: stored.lease.expiresAt, ...expiry } } });
  }
  return { sk, items };
}

/**
 * Pinning the incarnation as well as the version makes a commit built from a remembered header fail
 * on a task deleted or expired and created again meanwhile (its versions climb again from 1).
 */
function headerCondition(current: HeaderSnapshot | undefined, live: boolean, now: number, expectedWriteId: string | undefined) {
  if (!current) return { ConditionExpression: 'attribute_not_exists(pk)' };
  const names: Record<string, string> = { '#v': 'version', '#i': 'inc', '#e': 'expiresAtMs' };
  const values: Record<string, unknown> = { ':v': current.version, ':i': current.inc, ':now': now };
  if (!live) {
    // Re-creating over an expired task: pin the very incarnation that was seen expired.
    return { ConditionExpression: '#v = :v AND #i = :i AND #e <= :now', ExpressionAttributeNames: names, ExpressionAttributeValues: values };
  }
  let condition = '#v = :v AND #i = :i AND (attribute_not_exists(#e) OR #e > :now)';
  if (expectedWriteId !== undefined) {
    names['#w'] = 'writeId';
    // An older header (no splits) keeps its writeId inside `data`, which the caller compared: the
    // version and incarnation pin that header, and no attribute may have appeared since.
    if (current.splits === undefined) condition += ' AND attribute_not_exists(#w)';
    else {
      condition += ' AND #w = :w';
      values[':w'] = expectedWriteId;
    }
  }
  return { ConditionExpression: condition, ExpressionAttributeNames: names, ExpressionAttributeValues: values };
}
