import type { Request } from 'express';
import { createHash } from 'node:crypto';
import { DomainError } from '../../common/errors/domain-error';
import { BEARER_HEADERS_PER_CONNECTION, readBearerToken } from './bearer-token';

const sha256 = (s: string) => createHash('sha256').update(s).digest('base64url');
const request = (socket: object | undefined, authorization?: string) =>
  ({ headers: authorization === undefined ? {} : { authorization }, socket }) as unknown as Request;
const reason = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof DomainError ? e.message : String(e);
  }
  return 'read';
};

describe('readBearerToken', () => {
  it('reads the token and its SHA-256, or refuses a header that is not a well-formed Bearer credential', () => {
    const read = readBearerToken(request({}, 'bearer   abc.DEF-_~+/.g==  '));
    expect(read).toMatchObject({ token: 'abc.DEF-_~+/.g==', digest: sha256('abc.DEF-_~+/.g==') });
    expect(reason(() => readBearerToken(request({})))).toMatch(/bearer/i);
    expect(reason(() => readBearerToken(request({}, 'Basic dXNlcjpwdw==')))).toMatch(/bearer/i);
    expect(reason(() => readBearerToken(request({}, 'Bearer a.b.c d')))).toMatch(/well-formed/);
  });

  it("answers a header its connection sent before from the connection, and only that connection's exact header", () => {
    const connection = {};
    const first = readBearerToken(request(connection, 'Bearer a.b.c'));
    expect(readBearerToken(request(connection, 'Bearer a.b.c'))).toBe(first);
    // Another connection, or the same token in another header text, is read afresh (same token, same digest).
    const elsewhere = readBearerToken(request({}, 'Bearer a.b.c'));
    const spaced = readBearerToken(request(connection, 'Bearer a.b.c '));
    for (const other of [elsewhere, spaced]) {
      expect(other).not.toBe(first);
      expect(other).toMatchObject({ token: 'a.b.c', digest: first.digest });
    }
    // A header the connection sent before never answers for another: a different token is read and hashed.
    expect(readBearerToken(request(connection, 'Bearer a.b.d'))).toMatchObject({ token: 'a.b.d', digest: sha256('a.b.d') });
    // Refusals are not remembered: a bad header is refused every time.
    for (let i = 0; i < 2; i++) expect(reason(() => readBearerToken(request(connection, 'Bearer bad token')))).toMatch(/well-formed/);
    expect(readBearerToken(request(undefined, 'Bearer a.b.c')).token).toBe('a.b.c'); // no connection: read, not remembered
  });

  it(`remembers at most ${BEARER_HEADERS_PER_CONNECTION} distinct headers per connection, dropping the oldest`, () => {
    const connection = {};
    const reads = Array.from({ length: BEARER_HEADERS_PER_CONNECTION + 1 }, (_, i) => readBearerToken(request(connection, `Bearer t.${i}.s`)));
    const kept = Object.getOwnPropertySymbols(connection).map((s) => (connection as Record<symbol, unknown[]>)[s]);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toHaveLength(BEARER_HEADERS_PER_CONNECTION);
    expect(readBearerToken(request(connection, `Bearer t.${BEARER_HEADERS_PER_CONNECTION}.s`))).toBe(reads.at(-1));
    expect(readBearerToken(request(connection, 'Bearer t.1.s'))).toBe(reads[1]);
    const oldest = readBearerToken(request(connection, 'Bearer t.0.s'));
    expect(oldest).not.toBe(reads[0]);
    expect(oldest.token).toBe('t.0.s');
  });
});
