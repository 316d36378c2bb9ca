import { unmarshall } from './dynamodb-json';
import { DynamoDbServiceError, PutCommand, TransactItem, TransactWriteCommand } from './dynamodb-wire';
import { newUuid } from '../../../common/ids/uuid.util';
import { setTimeout as sleep } from 'node:timers/promises';
import { TaskWrite } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { IdempotencyKeyTakenError, VersionConflictError } from '../../state.errors';
import { expiresAtMs } from '../ttl-horizon.util';
import { frozenOwn, wakeAt } from '../../state-store.util';
import { DynamoDbContext } from './dynamodb-context';
import { HeaderSnapshot, isLive, snapshotOf } from './dynamodb-header-cache';
import { claimItem, refusingEntry } from './dynamodb-idempotency';
import { Item } from './dynamodb-items';
import { deleteKeys, layoutRequests, partItems, putItems, readSplits, replaceSplits, RequestLayout, requestItemBody, Splits } from './dynamodb-parts';
import { parseItem, readHeader } from './dynamodb-query';
import { ChildTtlPlan, extendChildTtl, planChildTtl } from './dynamodb-ttl';
import { HEADER_SK, ownerSessionsPk, REQUEST_INDEX_SK, requestIndexPk, requestSk, sessionPk, sessionSk, taskPk } from './dynamodb-keys';
import { leaseIndexWrites } from './dynamodb-leases';
import { archiveIndexWrites } from './dynamodb-archive';

/** DynamoDB allows 100 items per transaction: the header, two per request, and the session entry. */
export const MAX_REQUESTS_PER_COMMIT = 49;
/** A commit that stores a lease also puts its lease entry and may delete the one it replaces. */
export const MAX_REQUESTS_PER_LEASE_COMMIT = 48;
/**
 * With the archive index kept (the archiveIndex option), a commit also puts the task's archive
 * entry and may delete the one it replaces: one request fewer (48, or 47 with a lease).
 */
export const ARCHIVE_INDEX_REQUESTS = 1;
/** A commit that claims an Idempotency-Key (TaskWrite.idempotency) also puts its entry: one request fewer. */
export const IDEMPOTENCY_CLAIM_REQUESTS = 1;

/** Concurrent transactions on one item can cancel each other (`TransactionConflict`); retry these. */
const TRANSACTION_CONFLICT_ATTEMPTS = 4;

/**
 * The commit (StateStore.commit). A commit expecting version n > 0 builds on the header this store
 * last wrote or read when that is version n (with the expected writeId): no read first; else it
 * reads the header. A create reads nothing: its condition is that no header exists, and only when
 * an expired one is there (the failure returns it) does it re-create over that one. Either way a
 * lost race writes nothing. A claim whose key a live entry holds writes nothing either, and fails
 * with that entry (IdempotencyKeyTakenError), unless the header's condition failed too.
 */
export async function commitTask(ctx: DynamoDbContext, tenantId: string, write: TaskWrite): Promise<TaskRecord> {
  const { taskId } = write.task;
  const most =
    (wakeAt(write.task) !== undefined ? MAX_REQUESTS_PER_LEASE_COMMIT : MAX_REQUESTS_PER_COMMIT) -
    (ctx.archiveIndex ? ARCHIVE_INDEX_REQUESTS : 0) -
    (write.idempotency ? IDEMPOTENCY_CLAIM_REQUESTS : 0);
  if ((write.requests?.length ?? 0) > most) {
    const why = [
      wakeAt(write.task) === undefined ? '' : write.task.lease ? 'the task holds a lease' : 'the task has webhook deliveries waiting',
      ctx.archiveIndex ? 'the archive index is kept' : '',
      write.idempotency ? 'it claims an Idempotency-Key' : '',
    ]
      .filter(Boolean)
      .join(' and ');
    throw new RangeError(`A commit may write at most ${most} requests${why ? ` when ${why}` : ''}`);
  }
  const now = ctx.now();
  const pk = taskPk(tenantId, taskId);
  const requests = write.requests ?? [];
  const current = write.expectedVersion > 0 ? await expectedHeader(ctx, tenantId, write, now) : undefined;

  const ttl = planChildTtl(current !== undefined, current?.childTtl, expiresAtMs(write.task.expiresAt), now);
  if (current && ttl.extendTo !== undefined) {
    const session = { pk: current.sessionPk, sk: current.sessionSk };
    await extendChildTtl(ctx.wire, ctx.table, { tenantId, taskId, session }, ttl.extendTo);
  }
  // A create's incarnation is new, also when it ends up re-creating over an expired task.
  const inc = current ? current.inc : newUuid();
  const records = requests.map((r, i) => ({ seq: r.seq, requestId: r.requestId, json: write.requestJson?.[i] ?? JSON.stringify({ ...r, tenantId }) }));
  const headerBytes = Buffer.byteLength(JSON.stringify(write.task)) + JSON.stringify(current?.splits ?? {}).length;
  const layouts = layoutRequests(records, headerBytes);
  // Parts first: invisible until the transaction's request item names them.
  const parts = partItems(pk, layouts, { inc, ...(ttl.childTtl === undefined ? {} : { ttl: ttl.childTtl }) });
  await putItems(ctx.wire, ctx.table, parts);
  const attempt = { tenantId, write, ttl, now, inc, layouts };
  try {
    let base = current;
    let outcome = await applyCommit(ctx, attempt, base);
    if ('found' in outcome && !current) {
      const found = outcome.found ?? (await readHeader(ctx, tenantId, taskId))?.snapshot;
      if (found && !isLive(found, now)) outcome = await applyCommit(ctx, attempt, (base = found));
    }
    if ('held' in outcome) {
      const { key } = write.idempotency!;
      const held = await refusingEntry(ctx, tenantId, key, outcome.held);
      if (held) throw new IdempotencyKeyTakenError(held);
      // The entry expired (or went) since the claim met it: claimed once more, by the clock's time now.
      outcome = await applyCommit(ctx, { ...attempt, now: ctx.now() }, base);
      if ('held' in outcome) {
        const again = await refusingEntry(ctx, tenantId, key, outcome.held);
        // None live yet again: writers of the key still in the way, reported as the conflict it is.
        throw again ? new IdempotencyKeyTakenError(again) : new VersionConflictError(taskId, write.expectedVersion);
      }
    }
    if ('stored' in outcome) return outcome.stored;
    const actual = outcome.found && isLive(outcome.found, now) ? outcome.found.version : 0;
    throw new VersionConflictError(taskId, write.expectedVersion, actual);
  } catch (err) {
    // Cancelled: its parts are nobody's. Any other failure may yet have applied (a lost answer): keep them.
    if (err instanceof VersionConflictError || err instanceof IdempotencyKeyTakenError) await dropGarbage(ctx, parts as { pk: string; sk: string }[]);
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
 * when the header's condition failed, the header found instead (undefined: none), remembered; when
 * only the claim's did (the key is held), `held`: the entry item the failure returned, if it did.
 */
async function applyCommit(
  ctx: DynamoDbContext,
  attempt: { tenantId: string; write: TaskWrite; ttl: ChildTtlPlan; now: number; inc: string; layouts: RequestLayout[] },
  current: HeaderSnapshot | undefined,
): Promise<{ stored: TaskRecord } | { found?: HeaderSnapshot } | { held: Item | undefined }> {
  const { tenantId, write, ttl, now, inc, layouts } = attempt;
  const pk = taskPk(tenantId, write.task.taskId);
  const base = !current ? {} : (current.splits ?? (await readSplits(ctx.wire, ctx.table, pk)));
  const { splits, replaced } = replaceSplits(pk, base, layouts);
  const layout = { inc, requests: layouts, splits, archiveAt: ctx.archiveIndex ? ctx.changedAt(now) : undefined };
  const { input, stored, snapshot, ownerSession } = buildCommit(ctx.table, tenantId, write, current, ttl, now, layout);
  if (ownerSession) await ctx.wire.send(new PutCommand({ TableName: ctx.table, Item: ownerSession }));
  let failed: { old?: Item } | { held: Item | undefined } | undefined;
  try {
    failed = await transact(ctx, input, write);
  } catch (err) {
    ctx.headers.forget(pk);
    throw err;
  }
  // The header's condition held: the header is still `current`, as remembered.
  if (failed && 'held' in failed) return failed;
  if (failed) {
    const found = failed.old && oldSnapshot(failed.old);
    if (found) ctx.headers.remember(pk, found);
    else ctx.headers.forget(pk);
    return { found };
  }
  ctx.headers.remember(pk, snapshot);
  await dropGarbage(ctx, replaced);
  // What was stored, deep-frozen, not parsed back from its JSON (as postgres-commit.ts says).
  return { stored: frozenOwn(stored) };
}

/** Best effort: what a failure leaves carries the task's ttl and goes with its deletion. */
async function dropGarbage(ctx: DynamoDbContext, keys: { pk: string; sk: string }[]): Promise<void> {
  if (keys.length)
    await deleteKeys(
      ctx.wire,
      ctx.table,
      keys.map(({ pk, sk }) => ({ pk, sk })),
    ).catch(() => undefined);
}

/**
 * Sends a commit transaction; undefined when it applied, `{ old }` when the header's condition
 * failed (`old`: the header as it is, when there is one), `{ held }` when the header's held and
 * the claim's did not (`held`: the entry that holds the key, as the failure returned it).
 */
async function transact(
  ctx: DynamoDbContext,
  input: { TransactItems: TransactItem[] },
  write: TaskWrite,
): Promise<{ old?: Item } | { held: Item | undefined } | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.wire.send(new TransactWriteCommand(input));
      return undefined;
    } catch (err) {
      const reasons = err instanceof DynamoDbServiceError ? err.CancellationReasons : undefined;
      if (!reasons) throw err;
      // The header's reason first: a lost compare-and-set is a version conflict whatever the key.
      const header = reasons[0];
      if (header?.Code === 'ConditionalCheckFailed') return { old: header.Item && unmarshall(header.Item) };
      // The claim is the transaction's second item (buildCommit); it decides only once the header's condition held.
      const claim = write.idempotency ? reasons[1] : undefined;
      if (claim?.Code === 'ConditionalCheckFailed' && header?.Code === 'None') return { held: claim.Item && unmarshall(claim.Item) };
      // The same transaction re-applies only if its condition still holds, so retrying is safe;
      // a writer still in the way after that is reported as the conflict it is.
      if (!reasons.some((r) => r.Code === 'TransactionConflict')) throw err;
      if (attempt >= TRANSACTION_CONFLICT_ATTEMPTS) {
        // Commits claiming one key at once meet on its entry: the one that got it holds it (the caller reads it).
        if (claim?.Code === 'TransactionConflict' && header?.Code === 'None') return { held: undefined };
        throw new VersionConflictError(write.task.taskId, write.expectedVersion);
      }
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
 * time to list the task at. A claimed Idempotency-Key's entry is put in the same transaction, on
 * the condition that no live entry holds the key (dynamodb-idempotency.ts).
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
): { input: { TransactItems: TransactItem[] }; stored: TaskRecord; snapshot: HeaderSnapshot; ownerSession?: Record<string, unknown> } {
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
  // The claim right after the header: transact() tells the two failures apart by position.
  const claim = write.idempotency ? [claimItem(table, tenantId, write.idempotency, now)] : [];
  const items = [header, ...claim, ...requests, ...sessionEntry, ...lease.items, ...archive.items];
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
  if (live) return { input: { TransactItems: items }, stored, snapshot };
  // A create also lists the session under its owner: in the transaction when it fits, else (a
  // create of 49 requests) written by the caller just before it (idempotent, and harmless if the
  // create then loses: a listed session without tasks is skipped).
  const ownerSession = { pk: ownerSessionsPk(tenantId, stored.ownerId), sk: stored.sessionId, sessionId: stored.sessionId };
  if (items.length < 100) return { input: { TransactItems: [...items, { Put: { TableName: table, Item: ownerSession } }] }, stored, snapshot };
  return { input: { TransactItems: items }, stored, snapshot, ownerSession };
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
