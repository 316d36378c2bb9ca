import { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { PutCommand, TransactWriteCommand, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { TaskWrite } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { VersionConflictError } from '../../state.errors';
import { expiresAtMs } from '../ttl-horizon.util';
import { DynamoDbContext } from './dynamodb-context';
import { HeaderSnapshot, isLive, snapshotOf } from './dynamodb-header-cache';
import { Item } from './dynamodb-items';
import { deleteKeys, layoutRequests, partItems, putItems, readSplits, replaceSplits, RequestLayout, requestItemBody, Splits } from './dynamodb-parts';
import { parseItem, readHeader } from './dynamodb-query';
import { ChildTtlPlan, extendChildTtl, planChildTtl } from './dynamodb-ttl';
import {
  archivePk,
  archiveSk,
  HEADER_SK,
  leasePk,
  leaseShard,
  leaseSk,
  ownerSessionsPk,
  REQUEST_INDEX_SK,
  requestIndexPk,
  requestSk,
  sessionPk,
  sessionSk,
  taskPk,
} from './dynamodb-keys';

/** DynamoDB allows 100 items per transaction: the header, two per request, and the session entry. */
export const MAX_REQUESTS_PER_COMMIT = 49;
/** A commit that stores a lease also puts its lease entry and may delete the one it replaces. */
export const MAX_REQUESTS_PER_LEASE_COMMIT = 48;
/**
 * With the archive index kept (the archiveIndex option), a commit also puts the task's archive
 * entry and may delete the one it replaces: one request fewer (48, or 47 with a lease).
 */
export const ARCHIVE_INDEX_REQUESTS = 1;

/** Concurrent transactions on one item can cancel each other (`TransactionConflict`); retry these. */
const TRANSACTION_CONFLICT_ATTEMPTS = 4;

/**
 * The commit (StateStore.commit). A commit expecting version n > 0 builds on the header this store
 * last wrote or read when that is version n (with the expected writeId): no read first; else it
 * reads the header. A create reads nothing: its condition is that no header exists, and only when
 * an expired one is there (the failure returns it) does it re-create over that one. Either way a
 * lost race writes nothing.
 */
export async function commitTask(ctx: DynamoDbContext, tenantId: string, write: TaskWrite): Promise<TaskRecord> {
  const { taskId } = write.task;
  const most = (write.task.lease ? MAX_REQUESTS_PER_LEASE_COMMIT : MAX_REQUESTS_PER_COMMIT) - (ctx.archiveIndex ? ARCHIVE_INDEX_REQUESTS : 0);
  if ((write.requests?.length ?? 0) > most) {
    const why = [write.task.lease ? 'the task holds a lease' : '', ctx.archiveIndex ? 'the archive index is kept' : ''].filter(Boolean).join(' and ');
    throw new RangeError(`A commit may write at most ${most} requests${why ? ` when ${why}` : ''}`);
  }
  const now = ctx.now();
  const pk = taskPk(tenantId, taskId);
  const requests = write.requests ?? [];
  const current = write.expectedVersion > 0 ? await expectedHeader(ctx, tenantId, write, now) : undefined;

  const ttl = planChildTtl(current !== undefined, current?.childTtl, expiresAtMs(write.task.expiresAt), now);
  if (current && ttl.extendTo !== undefined) {
    const session = { pk: current.sessionPk, sk: current.sessionSk };
    await extendChildTtl(ctx.doc, ctx.table, { tenantId, taskId, session }, ttl.extendTo);
  }
  // A create's incarnation is new, also when it ends up re-creating over an expired task.
  const inc = current ? current.inc : randomUUID();
  const records = requests.map((r) => ({ seq: r.seq, requestId: r.requestId, json: JSON.stringify({ ...r, tenantId }) }));
  const headerBytes = Buffer.byteLength(JSON.stringify(write.task)) + JSON.stringify(current?.splits ?? {}).length;
  const layouts = layoutRequests(records, headerBytes);
  // Parts first: invisible until the transaction's request item names them.
  const parts = partItems(pk, layouts, { inc, ...(ttl.childTtl === undefined ? {} : { ttl: ttl.childTtl }) });
  await putItems(ctx.doc, ctx.table, parts);
  const attempt = { tenantId, write, ttl, now, inc, layouts };
  try {
    let outcome = await applyCommit(ctx, attempt, current);
    if ('found' in outcome && !current) {
      const found = outcome.found ?? (await readHeader(ctx, tenantId, taskId))?.snapshot;
      if (found && !isLive(found, now)) outcome = await applyCommit(ctx, attempt, found);
    }
    if ('stored' in outcome) return outcome.stored;
    const actual = outcome.found && isLive(outcome.found, now) ? outcome.found.version : 0;
    throw new VersionConflictError(taskId, write.expectedVersion, actual);
  } catch (err) {
    // Cancelled: its parts are nobody's. Any other failure may yet have applied (a lost answer): keep them.
    if (err instanceof VersionConflictError) await dropGarbage(ctx, parts as { pk: string; sk: string }[]);
    throw err;
  }
}

/**
 * The header a commit expecting `write.expectedVersion` (> 0) builds on: the remembered one when it
 * is that version and writeId, else the one read now; a VersionConflictError when it is not that.
 */
async function expectedHeader(ctx: DynamoDbContext, tenantId: string, write: TaskWrite, now: number): Promise<HeaderSnapshot> {
  const { taskId } = write.task;
  const fits = (h: HeaderSnapshot | undefined) =>
    isLive(h, now) && h.version === write.expectedVersion && (write.expectedWriteId === undefined || h.writeId === write.expectedWriteId);
  const remembered = ctx.headers.get(taskPk(tenantId, taskId));
  if (fits(remembered)) return remembered!;
  const current = (await readHeader(ctx, tenantId, taskId))?.snapshot;
  if (fits(current)) return current!;
  throw new VersionConflictError(taskId, write.expectedVersion, isLive(current, now) ? current.version : 0);
}

/**
 * One commit transaction on top of `current` (undefined: no header). On success the stored task;
 * when the header's condition failed, the header found instead (undefined: none), remembered.
 */
async function applyCommit(
  ctx: DynamoDbContext,
  attempt: { tenantId: string; write: TaskWrite; ttl: ChildTtlPlan; now: number; inc: string; layouts: RequestLayout[] },
  current: HeaderSnapshot | undefined,
): Promise<{ stored: TaskRecord } | { found?: HeaderSnapshot }> {
  const { tenantId, write, ttl, now, inc, layouts } = attempt;
  const pk = taskPk(tenantId, write.task.taskId);
  const base = !current ? {} : (current.splits ?? (await readSplits(ctx.doc, ctx.table, pk)));
  const { splits, replaced } = replaceSplits(pk, base, layouts);
  const layout = { inc, requests: layouts, splits, archiveAt: ctx.archiveIndex ? ctx.changedAt(now) : undefined };
  const { input, json, snapshot, ownerSession } = buildCommit(ctx.table, tenantId, write, current, ttl, now, layout);
  if (ownerSession) await ctx.doc.send(new PutCommand({ TableName: ctx.table, Item: ownerSession }));
  let failed: { old?: Item } | undefined;
  try {
    failed = await transact(ctx, input, write.task.taskId, write.expectedVersion);
  } catch (err) {
    ctx.headers.forget(pk);
    throw err;
  }
  if (failed) {
    const found = failed.old && oldSnapshot(failed.old);
    if (found) ctx.headers.remember(pk, found);
    else ctx.headers.forget(pk);
    return { found };
  }
  ctx.headers.remember(pk, snapshot);
  await dropGarbage(ctx, replaced);
  return { stored: JSON.parse(json) as TaskRecord };
}

/** Best effort: what a failure leaves carries the task's ttl and goes with its deletion. */
async function dropGarbage(ctx: DynamoDbContext, keys: { pk: string; sk: string }[]): Promise<void> {
  if (keys.length)
    await deleteKeys(
      ctx.doc,
      ctx.table,
      keys.map(({ pk, sk }) => ({ pk, sk })),
    ).catch(() => undefined);
}

/**
 * Sends a commit transaction; undefined when it applied, `{ old }` when the header's condition
 * failed (`old`: the header as it is, when there is one).
 */
async function transact(
  ctx: DynamoDbContext,
  input: ConstructorParameters<typeof TransactWriteCommand>[0],
  taskId: string,
  expected: number,
): Promise<{ old?: Item } | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.doc.send(new TransactWriteCommand(input));
      return undefined;
    } catch (err) {
      const reasons = (err as { CancellationReasons?: { Code?: string; Item?: Record<string, AttributeValue> }[] }).CancellationReasons;
      if (!reasons) throw err;
      const header = reasons[0];
      if (header?.Code === 'ConditionalCheckFailed') return { old: header.Item && unmarshall(header.Item) };
      // The same transaction re-applies only if its condition still holds, so retrying is safe;
      // a writer still in the way after that is reported as the conflict it is.
      if (!reasons.some((r) => r.Code === 'TransactionConflict')) throw err;
      if (attempt >= TRANSACTION_CONFLICT_ATTEMPTS) throw new VersionConflictError(taskId, expected);
      await sleep(10 + Math.random() * 40 * attempt);
    }
  }
}

/** The snapshot of a header a failed condition returned; undefined when its record does not parse. */
function oldSnapshot(item: Item): HeaderSnapshot | undefined {
  try {
    return snapshotOf(item, parseItem<TaskRecord>(item));
  } catch {
    return undefined;
  }
}

/**
 * The transaction of one commit. The header Put is conditioned on exactly the header state the
 * commit builds on (its version and incarnation, and writeId when the write expects one; or its
 * absence), so the commit applies only on top of that state, and a cancelled transaction writes
 * nothing. `layout` is the task's incarnation (a new one for a create), how each request is stored
 * (dynamodb-parts.ts: split ones have their parts written before, and the request item here is what
 * makes them visible), the header's splits once they are, and, when the archive index is kept, the
 * time to list the task at.
 * `snapshot` is the header it writes.
 */
export function buildCommit(
  table: string,
  tenantId: string,
  write: TaskWrite,
  current: HeaderSnapshot | undefined,
  ttl: ChildTtlPlan,
  now: number,
  layout: { inc: string; requests: RequestLayout[]; splits: Splits; archiveAt?: number },
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
  const archive = archiveIndexWrites(table, tenantId, stored, live ? current : undefined, { inc, exp, at: layout.archiveAt });

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
        ...(archive.sk === undefined ? {} : { archiveSk: archive.sk }),
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
  const items = [header, ...requests, ...sessionEntry, ...lease.items, ...archive.items];
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
    archiveSk: archive.sk,
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
 * The archive index follows the header too (StateStore.listUnarchived), when kept: every commit
 * puts the task's entry at the commit's time with its new version (carrying the task's expiry, as a
 * lease entry does) and deletes the entry it replaces, which the header names (`archiveSk`), so
 * this needs no read. A store that does not keep the index writes no item for it, and its header
 * carries the entry's key on, so a later commit that keeps the index still deletes that entry. An
 * expired incarnation's entry is left for the listing, as a lease entry is.
 */
function archiveIndexWrites(
  table: string,
  tenantId: string,
  stored: TaskRecord,
  current: HeaderSnapshot | undefined,
  listed: { inc: string; exp: number | undefined; at: number | undefined },
) {
  const { inc, exp, at } = listed;
  if (at === undefined) return { sk: current?.archiveSk, items: [] };
  const { taskId } = stored;
  const pk = archivePk(leaseShard(tenantId, taskId));
  const sk = archiveSk(at, tenantId, taskId);
  const items: NonNullable<TransactWriteCommandInput['TransactItems']> = [];
  if (current?.archiveSk !== undefined && current.archiveSk !== sk) items.push({ Delete: { TableName: table, Key: { pk, sk: current.archiveSk } } });
  const expiry = exp === undefined ? {} : { taskExp: exp, ttl: Math.ceil(exp / 1000) };
  const entry = { pk, sk, tenantId, taskId, version: stored.version, changedAt: at, inc, ...expiry };
  items.push({ Put: { TableName: table, Item: entry } });
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
