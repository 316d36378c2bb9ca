import { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { TaskWrite } from '../../state-store';
import { TaskRecord } from '../../state.entities';
import { expiresAtMs } from '../ttl-horizon.util';
import { RequestLayout, requestItemBody } from './dynamodb-parts';
import { ChildTtlPlan } from './dynamodb-ttl';
import { HEADER_SK, ownerSessionsPk, REQUEST_INDEX_SK, requestIndexPk, requestSk, sessionPk, sessionSk, taskPk } from './dynamodb-keys';

/** DynamoDB allows 100 items per transaction: the header, two per request, and the session entry. */
export const MAX_REQUESTS_PER_COMMIT = 49;

/** What the commit read of the header first (consistent read): the state its condition pins. */
export interface HeaderSnapshot {
  version: number;
  inc: string;
  expiresAtMs?: number;
  childTtl?: number;
  sessionPk: string;
  sessionSk: string;
}

export function isLive(header: HeaderSnapshot | undefined, now: number): header is HeaderSnapshot {
  return header !== undefined && (header.expiresAtMs === undefined || header.expiresAtMs > now);
}

/**
 * The transaction of one commit. The header Put is conditioned on exactly the header state the
 * commit read (its version, or its absence), so the commit applies only on top of that state, and
 * a cancelled transaction writes nothing. `layout` is the task's incarnation (a new one for a
 * create) and how each request is stored (dynamodb-parts.ts: split ones have their parts written
 * before, and the request item here is what makes them visible).
 */
export function buildCommit(
  table: string,
  tenantId: string,
  write: TaskWrite,
  current: HeaderSnapshot | undefined,
  ttl: ChildTtlPlan,
  now: number,
  layout: { inc: string; requests: RequestLayout[] },
): { input: TransactWriteCommandInput; json: string; ownerSession?: Record<string, unknown> } {
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
        ...(exp === undefined ? {} : { expiresAtMs: exp, ttl: Math.ceil(exp / 1000) }),
        ...(ttl.childTtl === undefined ? {} : { childTtl: ttl.childTtl }),
      },
      ...headerCondition(current, live, now),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    },
  };
  const put = (Item: Record<string, unknown>) => ({ Put: { TableName: table, Item: { ...Item, inc, ...childTtl } } });
  const requests = layout.requests.flatMap((r) => [
    put({ pk, sk: requestSk(r.seq), ...requestItemBody(r), requestId: r.requestId }),
    put({ pk: requestIndexPk(tenantId, r.requestId), sk: REQUEST_INDEX_SK, taskId, seq: r.seq }),
  ]);
  const sessionEntry = live ? [] : [put({ ...session, taskId })];
  const items = [header, ...requests, ...sessionEntry];
  if (live) return { input: { TransactItems: items }, json };
  // A create also lists the session under its owner: in the transaction when it fits, else (a
  // create of 49 requests) written by the caller just before it (idempotent, and harmless if the
  // create then loses: a listed session without tasks is skipped).
  const ownerSession = { pk: ownerSessionsPk(tenantId, stored.ownerId), sk: stored.sessionId, sessionId: stored.sessionId };
  if (items.length < 100) return { input: { TransactItems: [...items, { Put: { TableName: table, Item: ownerSession } }] }, json };
  return { input: { TransactItems: items }, json, ownerSession };
}

function headerCondition(current: HeaderSnapshot | undefined, live: boolean, now: number) {
  if (!current) return { ConditionExpression: 'attribute_not_exists(pk)' };
  const names = { '#v': 'version', '#e': 'expiresAtMs' };
  if (!live) {
    // Re-creating over an expired task: pin the very incarnation that was seen expired.
    return {
      ConditionExpression: '#v = :v AND #e <= :now',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: { ':v': current.version, ':now': now },
    };
  }
  return {
    ConditionExpression: '#v = :v AND (attribute_not_exists(#e) OR #e > :now)',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: { ':v': current.version, ':now': now },
  };
}
