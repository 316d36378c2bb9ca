import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { statusOf } from '../../common/errors/error-status';
import type { IdempotencyEntry } from '../../state/state.entities';
import { canonicalJson, checkFingerprint, claimOf, ClaimSource, MAX_IDEMPOTENCY_KEY_LENGTH } from './idempotency-claim';

const source: ClaimSource = {
  tenantId: 'ten',
  ownerId: 'o',
  agent: 'A:1',
  operation: 'turn',
  path: '/A/1/tealagents/v1alpha1/tasks/t',
  query: { stream: 'false' },
  body: { items: [{ content_type: 'text', content: 'hi' }], session_id: 's' },
};

/** The DomainError `fn` throws (it must throw one). */
function thrown(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a DomainError');
}

describe('claimOf', () => {
  it('is undefined without the header', () => {
    expect(claimOf(undefined, source)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['an empty structured-field string', '""'],
    [`${MAX_IDEMPOTENCY_KEY_LENGTH + 1} characters`, 'k'.repeat(MAX_IDEMPOTENCY_KEY_LENGTH + 1)],
    ['a tab', 'a\tb'],
    ['a newline', 'a\nb'],
    ['DEL', 'a\x7fb'],
    ['non-ASCII', 'clé'],
    ['an emoji', 'key-🙂'],
  ])('refuses %s with 400 INVALID_IDEMPOTENCY_KEY naming the header', (_what, header) => {
    const err = thrown(() => claimOf(header, source));
    expect(err.code).toBe(ErrorCode.INVALID_IDEMPOTENCY_KEY);
    expect(statusOf(err.code).status).toBe(400);
    expect(err.errors?.[0]).toEqual({ field: 'Idempotency-Key', message: err.message });
  });

  it(`takes ${MAX_IDEMPOTENCY_KEY_LENGTH} characters, and any printable ASCII`, () => {
    expect(claimOf('k'.repeat(MAX_IDEMPOTENCY_KEY_LENGTH), source)).toBeDefined();
    expect(claimOf(' !"#$%&()*+,-./09:;<=>?@AZ[\\]^_`az{|}~', source)).toBeDefined();
  });

  it('reads a quoted structured-field string as its content', () => {
    expect(claimOf('"abc"', source)).toEqual(claimOf('abc', source));
    expect(claimOf('"abc"', source)!.key).not.toBe(claimOf('"abd"', source)!.key);
  });

  it('carries the tenant and the operation', () => {
    expect(claimOf('abc', source)).toMatchObject({ tenantId: 'ten', operation: 'turn' });
  });

  it('scopes the key by owner, by agent and by the client key', () => {
    const key = (over: Partial<ClaimSource>, header = 'abc') => claimOf(header, { ...source, ...over })!.key;
    const keys = [key({}), key({ ownerId: 'o2' }), key({ agent: 'A:2' }), key({}, 'abd')];
    expect(new Set(keys).size).toBe(4);
    // The parts are length-prefixed: moving a character from the owner to the agent is another key.
    expect(key({ ownerId: 'ab', agent: 'c' })).not.toBe(key({ ownerId: 'a', agent: 'bc' }));
    // The tenant is the entry's partition, not part of the key; the route and body are the fingerprint's.
    expect(key({ path: '/other', body: { other: true } })).toBe(key({}));
  });

  it('fingerprints the same body with keys in another order alike', () => {
    const reordered = { session_id: 's', items: [{ content: 'hi', content_type: 'text' }] };
    expect(claimOf('abc', { ...source, body: reordered })!.fingerprint).toBe(claimOf('abc', source)!.fingerprint);
    expect(claimOf('abc', { ...source, query: undefined })!.fingerprint).toBe(claimOf('abc', { ...source, query: {} })!.fingerprint);
  });

  it.each([
    ['another body', { body: { items: [{ content_type: 'text', content: 'ho' }], session_id: 's' } }],
    [
      'another item',
      {
        body: {
          items: [
            { content_type: 'text', content: 'hi' },
            { content_type: 'text', content: 'ho' },
          ],
          session_id: 's',
        },
      },
    ],
    ['another path', { path: '/A/1/tealagents/v1alpha1/tasks/u' }],
    ['another query', { query: { stream: 'true' } }],
    ['no query', { query: undefined }],
    ['another operation', { operation: 'cancel' }],
  ])('fingerprints %s differently', (_what, over: Partial<ClaimSource>) => {
    expect(claimOf('abc', { ...source, ...over })!.fingerprint).not.toBe(claimOf('abc', source)!.fingerprint);
  });

  it("never stores the client's key text", () => {
    const header = 'client-key-7f3a9c';
    const claim = claimOf(header, source)!;
    expect(JSON.stringify(claim)).not.toContain(header);
    expect(claim.key).not.toContain('7f3a9c');
  });
});

describe('checkFingerprint', () => {
  const claim = claimOf('abc', source)!;
  const entry = (fingerprint: string): IdempotencyEntry => ({
    key: claim.key,
    fingerprint,
    operation: 'turn',
    taskId: 't',
    createdAt: 1,
    expiresAt: 2,
  });

  it('passes an entry stored for the same request', () => {
    expect(() => checkFingerprint(claim, entry(claim.fingerprint))).not.toThrow();
  });

  it('refuses one stored for another request with 422 IDEMPOTENCY_KEY_REUSED naming the header', () => {
    const other = claimOf('abc', { ...source, body: { other: true } })!;
    const err = thrown(() => checkFingerprint(claim, entry(other.fingerprint)));
    expect(err.code).toBe(ErrorCode.IDEMPOTENCY_KEY_REUSED);
    expect(statusOf(err.code).status).toBe(422);
    expect(err.errors).toEqual([{ field: 'Idempotency-Key', message: err.message }]);
  });
});

describe('canonicalJson', () => {
  it('sorts object keys at every level, arrays kept in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ y: 1, x: 2 }, 3], c: null } })).toBe('{"a":{"c":null,"d":[{"x":2,"y":1},3]},"b":1}');
  });

  it('is JSON.stringify for what has no object keys', () => {
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson('s')).toBe('"s"');
    expect(canonicalJson([2, 1])).toBe('[2,1]');
  });

  it('leaves out undefined members, as JSON does', () => {
    expect(canonicalJson({ b: undefined, a: 1 })).toBe('{"a":1}');
  });
});
