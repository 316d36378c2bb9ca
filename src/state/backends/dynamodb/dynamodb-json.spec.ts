import { marshall as sdkMarshall, unmarshall as sdkUnmarshall } from '@aws-sdk/util-dynamodb';
import { AttributeValue, marshall, unmarshall } from './dynamodb-json';

/** Items of the shapes the store writes (dynamodb-keys.ts), and every type DynamoDB has. */
const ITEMS: Record<string, Record<string, unknown>> = {
  'a header': {
    pk: 'T#tenant#task',
    sk: '#',
    version: 7,
    inc: 'c0ffee',
    data: JSON.stringify({ taskId: 'task', text: 'héllo "quoted" \n line' }),
    splits: { '3': { gen: 'g', parts: 2 } },
    expiresAtMs: 1_796_000_000_123,
    ttl: 1_796_000_001,
  },
  'a request part (binary)': { pk: 'T#a#b', sk: 'R#0000000001#P#0001', part: Buffer.from([0, 1, 2, 250, 255]), inc: 'x' },
  'every scalar': { s: '', n: -1.5, zero: 0, big: Number.MAX_SAFE_INTEGER, t: true, f: false, nil: null },
  'nested lists and maps': { l: [1, 'two', [3], { four: 4 }, null, false], m: { a: { b: { c: ['d'] } } }, empty: {}, none: [] },
  sets: { ss: new Set(['a', 'b']), ns: new Set([1, 2.5]) },
};

describe('DynamoDB typed JSON (dynamodb-json.ts) converts as the AWS SDK does', () => {
  it.each(Object.entries(ITEMS))('%s: marshalled as the SDK marshals it, and read back as the SDK reads it', (_name, item) => {
    const ours = marshall(item);
    expect(ours).toEqual(wireForm(sdkMarshall(item)));
    // What DynamoDB answers is JSON: through it, our read and the SDK's agree.
    const answered = JSON.parse(JSON.stringify(ours)) as Record<string, AttributeValue>;
    expect(normalised(unmarshall(answered))).toEqual(normalised(sdkUnmarshall(sdkForm(answered))));
    expect(normalised(unmarshall(answered))).toEqual(normalised(item));
  });

  it('leaves out an undefined attribute, map value or list entry (the DocumentClient would throw)', () => {
    expect(marshall({ a: 1, b: undefined, m: { c: undefined, d: 'x' }, l: [undefined, 2] })).toEqual({
      a: { N: '1' },
      m: { M: { d: { S: 'x' } } },
      l: { L: [{ N: '2' }] },
    });
  });

  it('refuses what DynamoDB cannot store: NaN, Infinity, a function, an empty or mixed set', () => {
    expect(() => marshall({ n: NaN })).toThrow(/cannot store the number NaN/);
    expect(() => marshall({ n: -Infinity })).toThrow(TypeError);
    expect(() => marshall({ f: () => 1 })).toThrow(/cannot store a function/);
    expect(() => marshall({ s: new Set() })).toThrow(/empty set/);
    expect(() => marshall({ s: new Set(['a', 1]) })).toThrow(/one kind per set/);
  });

  it('refuses an attribute type it does not know', () => {
    expect(() => unmarshall({ a: { X: '1' } as unknown as AttributeValue })).toThrow(/Unknown DynamoDB attribute type X/);
  });
});

/** The SDK marshals binary to bytes (its serializer sends base64): compare in the wire's form. */
function wireForm(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(wireForm);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wireForm(v)]));
  return value;
}

/** The wire's base64 binary as the SDK's deserializer hands it to unmarshall: bytes. */
function sdkForm(item: Record<string, AttributeValue>): Record<string, never> {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') {
      const v = value as Record<string, unknown>;
      if (typeof v.B === 'string') return { B: new Uint8Array(Buffer.from(v.B, 'base64')) };
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    }
    return value;
  };
  return walk(item) as Record<string, never>;
}

/** Bytes as plain arrays (a Buffer and a Uint8Array of the same bytes compare equal), sets as sorted arrays. */
function normalised(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: [...value] };
  if (value instanceof Set) return { set: [...value].map(normalised).sort() };
  if (Array.isArray(value)) return value.map(normalised);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalised(v)]));
  return value;
}
