import { DeleteCommand, DynamoDbWire, GetCommand, isConditionFailure, PutCommand } from './dynamodb-wire';
import type { StreamEvent } from '../../state-store';
import { isExpired } from '../../state-store.util';
import type { TaskRecord } from '../../state.entities';
import { HEADER_SK, REQUEST_INDEX_SK, requestIndexPk, taskPk } from './dynamodb-keys';
import { queryPrefix } from './dynamodb-items';

/**
 * The stream log on DynamoDB (StateStore.appendStreamEvents / readStreamEvents): items under the
 * task's partition, so a Query reads them and the task's deletion finds them.
 *
 *   pk = T#<tenant>#TASK#<taskId>   sk = EVT#<seq, 6 digits>#<first n, 10 digits>
 *   data (JSON array of events), lastN, inc (the header's incarnation), ttl (the header's childTtl)
 *
 * One item per append (a batch of FLUSH_EVENTS, src/tasks/events/stream-event-writer.service.ts), split to stay
 * under ITEM_BYTES (DynamoDB's item limit is 400 KB); a single event larger than that is not stored
 * (a reattach elsewhere then sees a gap and gets the outcome). Plain puts, never transactions: a
 * transaction that touched the header would make the task's commits (lease renewals) conflict. So
 * an append racing the task's deletion can leave an item behind; it carries the task's TTL.
 */
const ITEM_BYTES = 300_000;
export const STREAM_SK_PREFIX = 'EVT#';

const streamSk = (seq: number, n: number) => `${STREAM_SK_PREFIX}${String(seq).padStart(6, '0')}#${String(n).padStart(10, '0')}`;
const seqOf = (sk: string) => Number(sk.slice(STREAM_SK_PREFIX.length, STREAM_SK_PREFIX.length + 6));

type Item = Record<string, unknown>;

export async function appendStreamItems(
  wire: DynamoDbWire,
  table: string,
  tenantId: string,
  taskId: string,
  seq: number,
  events: StreamEvent[],
  requestId?: string,
): Promise<void> {
  const pk = taskPk(tenantId, taskId);
  // The named request's index entry, read beside the header: it names the incarnation it belongs to.
  const [header, ref] = await Promise.all([
    liveHeader(wire, table, pk),
    requestId === undefined
      ? undefined
      : wire.send(new GetCommand({ TableName: table, Key: { pk: requestIndexPk(tenantId, requestId), sk: REQUEST_INDEX_SK }, ConsistentRead: true })),
  ]);
  // Not a request of this task: a writer of an earlier task of the id (StateStore.appendStreamEvents).
  if (!header || seq >= header.requestCount) return;
  if (ref && !(ref.Item && ref.Item.inc === header.inc && ref.Item.taskId === taskId && Number(ref.Item.seq) === seq)) return;
  // Only this incarnation's items count: one of an earlier task of the id (an append that read it
  // live just before its deletion) must not hold this one's log back; the deletion of this task
  // removes it, and so does its ttl.
  const held = (await streamKeys(wire, table, pk)).filter((k) => k.inc === header.inc);
  const latest = held.at(-1);
  if (latest && seqOf(latest.sk) > seq) return;
  const last = latest && seqOf(latest.sk) === seq ? latest.lastN : -1;
  const fresh = events.filter((e) => e.n > last);
  const older = held.filter((k) => seqOf(k.sk) < seq);
  for (const chunk of chunks(fresh)) {
    const item: Item = { pk, sk: streamSk(seq, chunk[0]!.n), data: JSON.stringify(chunk), lastN: chunk.at(-1)!.n, inc: header.inc };
    if (header.childTtl !== undefined) item.ttl = header.childTtl;
    await ignoringConditionFailure(wire.send(new PutCommand({ TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' })));
  }
  // An earlier request's log goes once this one's is there (a task keeps one); only while it is
  // still this incarnation's (a later task of the id may have written the same key since).
  const ours = { ConditionExpression: 'inc = :inc', ExpressionAttributeValues: { ':inc': header.inc } };
  await Promise.all(older.map((k) => ignoringConditionFailure(wire.send(new DeleteCommand({ TableName: table, Key: { pk, sk: k.sk }, ...ours })))));
}

export async function readStreamItems(wire: DynamoDbWire, table: string, tenantId: string, taskId: string, seq: number, after: number): Promise<StreamEvent[]> {
  const pk = taskPk(tenantId, taskId);
  const header = await liveHeader(wire, table, pk);
  if (!header) return [];
  const out: StreamEvent[] = [];
  for (const item of await queryPrefix(wire, table, pk, `${STREAM_SK_PREFIX}${String(seq).padStart(6, '0')}#`)) {
    if (item.inc !== header.inc || Number(item.lastN) <= after) continue;
    for (const e of JSON.parse(String(item.data)) as StreamEvent[]) if (e.n > after) out.push(e);
  }
  return out;
}

/** The keys of up to `limit` stream items of a task (a step of its deletion removes them). */
export async function streamItemKeys(wire: DynamoDbWire, table: string, pk: string, limit: number): Promise<{ pk: string; sk: string }[]> {
  return (await streamKeys(wire, table, pk)).slice(0, Math.max(1, limit)).map(({ sk }) => ({ pk, sk }));
}

async function liveHeader(wire: DynamoDbWire, table: string, pk: string): Promise<{ inc: unknown; requestCount: number; childTtl?: number } | undefined> {
  const item = (await wire.send(new GetCommand({ TableName: table, Key: { pk, sk: HEADER_SK }, ConsistentRead: true }))).Item;
  if (!item || typeof item.data !== 'string') return undefined;
  const task = JSON.parse(item.data) as TaskRecord;
  if (isExpired(task) || task.deletingAt !== undefined) return undefined;
  return { inc: item.inc, requestCount: task.requestCount, childTtl: item.childTtl === undefined ? undefined : Number(item.childTtl) };
}

async function streamKeys(wire: DynamoDbWire, table: string, pk: string): Promise<{ sk: string; lastN: number; inc: unknown }[]> {
  return (await queryPrefix(wire, table, pk, STREAM_SK_PREFIX, 'sk, lastN, inc')).map((i) => ({ sk: String(i.sk), lastN: Number(i.lastN), inc: i.inc }));
}

/** Events in groups whose JSON stays under ITEM_BYTES; an event alone over it is left out. */
function chunks(events: StreamEvent[]): StreamEvent[][] {
  const out: StreamEvent[][] = [];
  let current: StreamEvent[] = [];
  let bytes = 0;
  for (const e of events) {
    const size = Buffer.byteLength(JSON.stringify(e)) + 1;
    if (size > ITEM_BYTES) continue;
    if (bytes + size > ITEM_BYTES && current.length) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(e);
    bytes += size;
  }
  if (current.length) out.push(current);
  return out;
}

async function ignoringConditionFailure(put: Promise<unknown>): Promise<void> {
  try {
    await put;
  } catch (err) {
    // Already there (a retried append), or no longer this incarnation's (a conditioned delete).
    if (!isConditionFailure(err)) throw err;
  }
}
