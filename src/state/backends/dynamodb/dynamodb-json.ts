/**
 * DynamoDB's typed JSON (`{"S": "…"}`, `{"N": "1"}`, `{"M": {…}}`) to and from plain values, as
 * the AWS SDK's DocumentClient converts them (its defaults): strings, numbers (as Numbers), booleans,
 * null, lists, maps, binary (a Buffer or Uint8Array, base64 on the wire; read back as a Buffer) and
 * sets (string, number, binary). An undefined value in a map or list is left out (the
 * DocumentClient throws unless told to remove it); NaN and ±Infinity are refused (DynamoDB has no
 * such number). The store's items are flat maps of these (dynamodb-keys.ts); the wire converts each
 * request's items and each answer's (dynamodb-wire.ts).
 */
export type AttributeValue =
  | { S: string }
  | { N: string }
  | { BOOL: boolean }
  | { NULL: true }
  | { B: string }
  | { L: AttributeValue[] }
  | { M: Record<string, AttributeValue> }
  | { SS: string[] }
  | { NS: string[] }
  | { BS: string[] };

export function toAttribute(value: unknown): AttributeValue | undefined {
  switch (typeof value) {
    case 'string':
      return { S: value };
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`DynamoDB cannot store the number ${value}`);
      return { N: String(value) };
    case 'bigint':
      return { N: value.toString() };
    case 'boolean':
      return { BOOL: value };
    case 'undefined':
      return undefined;
    case 'object':
      if (value === null) return { NULL: true };
      if (Array.isArray(value)) return { L: value.flatMap((v) => toAttribute(v) ?? []) };
      if (value instanceof Uint8Array) return { B: base64(value) };
      if (value instanceof Set) return setAttribute(value);
      return { M: marshall(value as Record<string, unknown>) };
    default:
      throw new TypeError(`DynamoDB cannot store a ${typeof value}`);
  }
}

/** A map of plain values as DynamoDB's typed JSON (an item, a key, expression values). */
export function marshall(item: Record<string, unknown>): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const name in item) {
    const attribute = toAttribute(item[name]);
    if (attribute !== undefined) out[name] = attribute;
  }
  return out;
}

export function fromAttribute(value: AttributeValue): unknown {
  const v = value as Partial<Record<string, unknown>>;
  if (v.S !== undefined) return v.S;
  if (v.N !== undefined) return Number(v.N);
  if (v.BOOL !== undefined) return v.BOOL;
  if (v.NULL !== undefined) return null;
  if (v.M !== undefined) return unmarshall(v.M as Record<string, AttributeValue>);
  if (v.L !== undefined) return (v.L as AttributeValue[]).map(fromAttribute);
  if (v.B !== undefined) return Buffer.from(v.B as string, 'base64');
  if (v.SS !== undefined) return new Set(v.SS as string[]);
  if (v.NS !== undefined) return new Set((v.NS as string[]).map(Number));
  if (v.BS !== undefined) return new Set((v.BS as string[]).map((b) => Buffer.from(b, 'base64')));
  throw new TypeError(`Unknown DynamoDB attribute type ${Object.keys(value).join(', ')}`);
}

/** An item (or key) of DynamoDB's typed JSON as plain values. */
export function unmarshall(item: Record<string, AttributeValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name in item) out[name] = fromAttribute(item[name]!);
  return out;
}

function base64(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('base64');
}

function setAttribute(set: Set<unknown>): AttributeValue {
  const values = [...set];
  if (values.length === 0) throw new TypeError('DynamoDB cannot store an empty set');
  if (values.every((v) => typeof v === 'string')) return { SS: values as string[] };
  if (values.every((v) => typeof v === 'number' || typeof v === 'bigint')) return { NS: values.map((v) => String(v)) };
  if (values.every((v) => v instanceof Uint8Array)) return { BS: values.map((v) => base64(v as Uint8Array)) };
  throw new TypeError('DynamoDB sets hold strings, numbers or binary, one kind per set');
}
