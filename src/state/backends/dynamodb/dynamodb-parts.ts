import { randomBytes } from 'node:crypto';
import { DeleteCommand, DynamoDbWire, GetCommand, PutCommand } from './dynamodb-wire';
import { StateCorruptError } from '../../state.errors';
import { itemName, PART_PREFIX, requestPartSk, requestSk } from './dynamodb-keys';
import { queryPrefix } from './dynamodb-items';

/**
 * Request records larger than a DynamoDB item (400 KB) or than what one commit transaction carries
 * (4 MB in all): the record's JSON is split into part items, written by plain puts BEFORE the commit
 * transaction, whose request item then names them (`gen`, `parts`). Until that commit applies, no
 * reader looks at them; so a record of any size is stored, an answer included, whatever it adds.
 *
 * - `gen` is random per write: a reader takes exactly the parts of the generation its request item
 *   names, never those of an earlier (larger) version or of a writer that lost.
 * - After its commit applied, a writer deletes the parts the request's item named just before
 *   (the header's `splits` tells which, see Splits): the commit replaced that item, and no later
 *   commit can name them (a later writer commits on top of the new version, with parts of its
 *   own). A writer whose commit was cancelled deletes its own parts; one whose commit may or may
 *   not have applied (a lost answer) keeps them. What a crash or such a race leaves behind carries
 *   the task's `ttl`; the task's deletion removes each request's parts after it, then any of its
 *   incarnation left over (incarnationPartKeys).
 * - A reader that finds parts missing (deleted by a writer that replaced the record meanwhile)
 *   reads the request item again.
 */
const INLINE_BYTES = 350_000;
const PART_BYTES = 350_000;
/** Inline request JSON one commit carries at most (the transaction limit of 4 MB, less keys and the header). */
const TRANSACTION_DATA_BYTES = 3_000_000;
/**
 * The largest request record a new request may start with (StateStore.maxRequestBytes): not a
 * limit of the table (parts have none) but of the time to write one (every part goes to the task's
 * partition, about 1 MB/s on DynamoDB) and of the memory to read it. Six times the default
 * TA_MAX_BODY_BYTES, so every body the server accepts by default fits, escaping included.
 */
export const DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024;
/** Parts put, read or deleted at once. */
const CONCURRENCY = 8;
/** How often a read whose parts a concurrent rewrite removed is retried. */
const TORN_READ_ATTEMPTS = 3;

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };

/** How one request of a commit is stored: inline in its item (`data`), or in parts. */
export interface RequestLayout {
  seq: number;
  requestId: string;
  json: string;
  split?: { gen: string; parts: Buffer[] };
}

/**
 * Inline as long as each record fits an item and the commit's inline total stays within a
 * transaction (smallest first); every other record is split.
 */
export function layoutRequests(records: { seq: number; requestId: string; json: string }[], headerBytes: number): RequestLayout[] {
  let budget = TRANSACTION_DATA_BYTES - headerBytes;
  const sized = records.map((r) => ({ ...r, bytes: Buffer.byteLength(r.json) }));
  const inline = new Set<number>();
  for (const r of [...sized].sort((a, b) => a.bytes - b.bytes)) {
    if (r.bytes > INLINE_BYTES || r.bytes > budget) break;
    inline.add(r.seq);
    budget -= r.bytes;
  }
  return sized.map(({ seq, requestId, json }) => {
    if (inline.has(seq)) return { seq, requestId, json };
    const bytes = Buffer.from(json);
    const parts: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += PART_BYTES) parts.push(bytes.subarray(at, at + PART_BYTES));
    return { seq, requestId, json, split: { gen: randomBytes(8).toString('hex'), parts } };
  });
}

/** The attributes of a request item: its JSON, or the generation and count of its parts. */
export function requestItemBody(layout: RequestLayout): Item {
  return layout.split ? { gen: layout.split.gen, parts: layout.split.parts.length } : { data: layout.json };
}

/** The part items of the split requests of a commit. */
export function partItems(pk: string, layouts: RequestLayout[], extra: Item): Item[] {
  return layouts.flatMap((l) => (l.split ? l.split.parts.map((part, i) => ({ pk, sk: requestPartSk(l.seq, l.split!.gen, i), part, ...extra })) : []));
}

export async function putItems(wire: DynamoDbWire, table: string, items: Item[]): Promise<void> {
  for (let i = 0; i < items.length; i += CONCURRENCY) {
    await Promise.all(items.slice(i, i + CONCURRENCY).map((Item) => wire.send(new PutCommand({ TableName: table, Item }))));
  }
}

export async function deleteKeys(wire: DynamoDbWire, table: string, keys: Key[]): Promise<void> {
  for (let i = 0; i < keys.length; i += CONCURRENCY) {
    await Promise.all(keys.slice(i, i + CONCURRENCY).map((Key) => wire.send(new DeleteCommand({ TableName: table, Key }))));
  }
}

/**
 * The requests of a task stored in parts, by `seq`: the generation and part count each one's item
 * names. The header records it (`splits`), and each commit updates it, so a commit knows which
 * parts the requests it rewrites leave behind without reading their items.
 */
export type Splits = Record<string, { gen: string; parts: number }>;

/**
 * `splits` once `layouts` are written, and the keys of the parts those writes replace: garbage once
 * the commit applied (deleted after it, see above).
 */
export function replaceSplits(pk: string, splits: Splits, layouts: RequestLayout[]): { splits: Splits; replaced: Key[] } {
  const next = { ...splits };
  const replaced: Key[] = [];
  for (const l of layouts) {
    const old = next[String(l.seq)];
    if (old) replaced.push(...Array.from({ length: old.parts }, (_, i) => ({ pk, sk: requestPartSk(l.seq, old.gen, i) })));
    if (l.split) next[String(l.seq)] = { gen: l.split.gen, parts: l.split.parts.length };
    else delete next[String(l.seq)];
  }
  return { splits: next, replaced };
}

/**
 * The splits of a header written before headers recorded them (older data): read from the request
 * items, one Query (only the two attributes come back; large inline records still cost their read).
 * The commit then records them, so this happens once per task.
 */
export async function readSplits(wire: DynamoDbWire, table: string, pk: string): Promise<Splits> {
  const splits: Splits = {};
  for (const item of await queryPrefix(wire, table, pk, 'REQ#', 'sk, gen, parts')) {
    if (item.parts !== undefined) splits[String(Number(String(item.sk).slice('REQ#'.length)))] = { gen: String(item.gen), parts: Number(item.parts) };
  }
  return splits;
}

/** The keys of the parts a request item names (none when it holds its record inline). */
export function partKeysOf(item: Item): Key[] {
  if (item.parts === undefined) return [];
  const pk = String(item.pk);
  const seq = Number(String(item.sk).slice('REQ#'.length));
  return Array.from({ length: Number(item.parts) }, (_, i) => ({ pk, sk: requestPartSk(seq, String(item.gen), i) }));
}

/**
 * The request item with `data` put together from the parts it names (the item itself when it holds
 * its record inline); undefined when a part is missing (a concurrent rewrite replaced the record
 * and removed them since the item was read).
 */
export async function withParts(wire: DynamoDbWire, table: string, item: Item): Promise<Item | undefined> {
  const keys = partKeysOf(item);
  if (!keys.length) return item;
  const bytes: Uint8Array[] = [];
  for (let i = 0; i < keys.length; i += CONCURRENCY) {
    const got = await Promise.all(keys.slice(i, i + CONCURRENCY).map((Key) => wire.send(new GetCommand({ TableName: table, Key, ConsistentRead: true }))));
    for (const { Item: part } of got) {
      if (!part || part.inc !== item.inc) return undefined;
      if (!(part.part instanceof Uint8Array)) throw new StateCorruptError(itemName(part as Key));
      bytes.push(part.part);
    }
  }
  return { ...item, data: Buffer.concat(bytes).toString('utf8') };
}

/** Request `seq` read whole, read again (a few times) when a concurrent rewrite removed its parts meanwhile. */
export async function readRequestItem(wire: DynamoDbWire, table: string, pk: string, seq: number): Promise<Item | undefined> {
  for (let attempt = 1; ; attempt++) {
    const { Item: item } = await wire.send(new GetCommand({ TableName: table, Key: { pk, sk: requestSk(seq) }, ConsistentRead: true }));
    if (!item) return undefined;
    const whole = await withParts(wire, table, item);
    if (whole) return whole;
    if (attempt >= TORN_READ_ATTEMPTS) throw new StateCorruptError(itemName(item as Key));
  }
}

/**
 * The keys of the parts under a task written for incarnation `inc` (named or not): what a deletion
 * sweeps up last. Parts of another incarnation are left: they may be a create's, written just
 * before its transaction, that will hold the id once this deletion is done.
 */
export async function incarnationPartKeys(wire: DynamoDbWire, table: string, pk: string, inc: unknown): Promise<Key[]> {
  return (await queryPrefix(wire, table, pk, PART_PREFIX, 'pk, sk, inc')).filter((i) => i.inc === inc).map((i) => ({ pk: String(i.pk), sk: String(i.sk) }));
}
