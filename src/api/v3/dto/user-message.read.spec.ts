import 'reflect-metadata';
import { DomainError } from '../../../common/errors/domain-error';
import { validateBody } from '../../../common/validation/validate-body';
import { plainUserMessage, readUserMessage } from './user-message.read';
import { UserMessageDto } from './user-message.dto';

const PNG = 'data:image/png;base64,iVBORw0KGgo=';
const ABSENT = Symbol('absent');

// Values each field may take: valid, invalid, and the edge cases class-transformer treats specially.
const IDS = [ABSENT, 'abc', 'A-b_c.d:9', 'x'.repeat(128), 'x'.repeat(129), '', 'a b', 'é', 12, null, undefined, ['abc'], { id: 'abc' }];
const ITEMS = [
  ABSENT,
  [],
  'hello',
  null,
  undefined,
  {},
  [{ content: 'hi' }],
  [{ content_type: 'text', content: 'hi' }],
  [{ content: 'hi', content_type: 'text' }],
  [{ content_type: 'text', content: '' }],
  [{ content_type: 'image', content: PNG }],
  [{ content_type: 'image', content: 'https://example.com/cat.png' }],
  [{ content_type: 'image', content: 'data:image/tiff;base64,AAAA' }],
  [{ content_type: 'image', content: 'data:image/png;base64,!!!' }],
  [{ content_type: 'video', content: 'x' }],
  [{ content_type: 'TEXT', content: 'x' }],
  [{ content_type: null, content: 'x' }],
  [{ content_type: undefined, content: 'x' }],
  [{ content: 5 }],
  [{ content: null }],
  [{ content_type: 'text' }],
  [{ content: 'hi', extra: 1 }],
  [{ content: 'hi' }, { content_type: 'image', content: PNG }, { content: 'bye' }],
  [{ content: 'hi' }, { content: 7 }],
  ['hi'],
  [null],
  [[]],
  [[{ content: 'hi' }]],
  [JSON.parse('{"__proto__": {"content": "x"}, "content": "hi"}')],
];
const CONTEXTS = [
  ABSENT,
  {},
  { a: 'b' },
  { a: 'b', c: 'd' },
  { a: 1 },
  { a: null },
  { a: { b: 'c' } },
  [],
  ['a'],
  null,
  undefined,
  'str',
  JSON.parse('{"__proto__": "x"}'),
  JSON.parse('{"__proto__": {"a": "b"}}'),
];
const EXTRAS = [undefined, { foo: 1 }, { chat_history: [] }, JSON.parse('{"__proto__": {"task_id": "x"}}'), JSON.parse('{"constructor": "x"}')];

/** A deterministic PRNG (mulberry32), so a failure names a body that fails again. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function bodyOf(
  parts: { session_id: unknown; task_id: unknown; items: unknown; user_context: unknown; extra: unknown },
  order: string[],
): Record<string, unknown> {
  // Built by JSON.parse where possible, as the HTTP layer gives it (own `__proto__` keys stay data).
  const body: Record<string, unknown> = JSON.parse('{}');
  for (const key of order) {
    if (key === 'extra') {
      if (parts.extra)
        for (const k of Object.keys(parts.extra))
          Object.defineProperty(body, k, { value: (parts.extra as Record<string, unknown>)[k], enumerable: true, writable: true, configurable: true });
      continue;
    }
    const value = parts[key as keyof typeof parts];
    if (value !== ABSENT) body[key] = clone(value);
  }
  return body;
}

/** A deep copy keeping `undefined` and own `__proto__` keys (structuredClone keeps both). */
function clone<T>(value: T): T {
  return value === undefined ? value : structuredClone(value);
}

function corpus(): unknown[] {
  const random = prng(14);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const keys = ['session_id', 'task_id', 'items', 'user_context', 'extra'];
  const bodies: unknown[] = [null, undefined, 'str', 5, true, [], [{ items: [{ content: 'hi' }] }]];
  // Every items value with the other fields valid, then random combinations of everything.
  for (const items of ITEMS) bodies.push(bodyOf({ session_id: 's1', task_id: 't1', items, user_context: { a: 'b' }, extra: undefined }, keys));
  // Random valid bodies (key order too), which the fast path must read as validateBody does.
  const ids = IDS.slice(0, 4);
  const items = ITEMS.filter(
    (x) =>
      Array.isArray(x) &&
      x.length &&
      x.every(
        (i) =>
          typeof i === 'object' &&
          i &&
          'content' in i &&
          Object.keys(i).every((k) => k === 'content' || k === 'content_type') &&
          typeof i.content === 'string' &&
          ((i as { content_type?: string }).content_type ?? 'text') === 'text',
      ),
  );
  items.push([{ content_type: 'image', content: PNG }]);
  for (let i = 0; i < 500; i++) {
    const order = [...keys].sort(() => random() - 0.5);
    bodies.push(bodyOf({ session_id: pick(ids), task_id: pick(ids), items: pick(items), user_context: pick(CONTEXTS.slice(0, 4)), extra: undefined }, order));
  }
  for (let i = 0; i < 3000; i++) {
    const order = [...keys].sort(() => random() - 0.5);
    bodies.push(bodyOf({ session_id: pick(IDS), task_id: pick(IDS), items: pick(ITEMS), user_context: pick(CONTEXTS), extra: pick(EXTRAS) }, order));
  }
  return bodies;
}

type Outcome = { ok: UserMessageDto } | { error: { code: string; message: string; errors: unknown } };

function outcome(read: () => UserMessageDto): Outcome {
  try {
    return { ok: read() };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { error: { code: err.code, message: err.message, errors: err.errors } };
  }
}

/** Own keys in order, all the way down: toStrictEqual does not compare key order. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value !== 'object' || value === null) return value;
  return { proto: Object.getPrototypeOf(value)?.constructor?.name, entries: Object.keys(value).map((k) => [k, shape((value as Record<string, unknown>)[k])]) };
}

describe('readUserMessage (the v3 invoke body without class-validator on the common shape)', () => {
  const bodies = corpus();

  it('gives, for every body, what validateBody gives: the same instance or the same 422 naming the same fields', () => {
    let fast = 0;
    let invalid = 0;
    for (const body of bodies) {
      const expected = outcome(() => validateBody(UserMessageDto, clone(body)));
      const actual = outcome(() => readUserMessage(clone(body)));
      if ('error' in expected) invalid++;
      try {
        expect(actual).toStrictEqual(expected);
        if ('ok' in expected && 'ok' in actual) {
          expect(actual.ok).toBeInstanceOf(UserMessageDto);
          expect(shape(actual.ok)).toEqual(shape(expected.ok));
        }
      } catch (err) {
        throw new Error(`body ${JSON.stringify(body)}: ${(err as Error).message}`, { cause: err });
      }
      if (plainUserMessage(clone(body))) fast++;
    }
    // The corpus exercises both paths substantially.
    expect(invalid).toBeGreaterThan(500);
    expect(fast).toBeGreaterThan(300);
  });

  it('never reads a body validateBody would refuse (the fast path only accepts, never words an error)', () => {
    for (const body of bodies) {
      const read = plainUserMessage(clone(body));
      if (!read) continue;
      expect(outcome(() => validateBody(UserMessageDto, clone(body)))).toStrictEqual({ ok: read });
    }
  });

  it.each([
    ['a first turn', { items: [{ content_type: 'text', content: 'hello' }] }],
    ['a follow-on', { task_id: 'task-1', items: [{ content_type: 'text', content: 'hello' }] }],
    [
      'ids, a user context and an image',
      { session_id: 's', task_id: 't', items: [{ content: 'see' }, { content_type: 'image', content: PNG }], user_context: { team: 'x' } },
    ],
  ])('takes the fast path for %s', (_name, body) => {
    expect(plainUserMessage(body)).toStrictEqual(validateBody(UserMessageDto, clone(body)));
  });

  it('copies the nested values, so the instance shares nothing with the body', () => {
    const body = { items: [{ content: 'hi' }], user_context: { a: 'b' } };
    const read = plainUserMessage(body)!;
    expect(read.items[0]).not.toBe(body.items[0]);
    expect(read.user_context).not.toBe(body.user_context);
  });
});
