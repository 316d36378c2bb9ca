import { base64url } from 'jose';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { claimedIdentityOf, MAX_CLAIMED_PAYLOAD_CHARS, readClaimedIdentity, withClaimedIdentity } from './claimed-identity';
import { invalidToken } from './entra-errors';

const TID = 'c0ffee00-0000-4000-8000-0000000000d1';
const OID = '6a1d3a52-4b7e-4c53-9c1e-2f0e8c9d7b10';
const enc = (v: unknown) => base64url.encode(typeof v === 'string' ? v : JSON.stringify(v));
const token = (payload: unknown) => `${enc({ alg: 'RS256', kid: 'k' })}.${enc(payload)}.c2lnbmF0dXJl`;

describe('readClaimedIdentity: what a token says about its caller, read without trusting it', () => {
  it('tid and oid, lower-cased, whatever else the payload holds', () => {
    expect(readClaimedIdentity(token({ tid: TID.toUpperCase(), oid: OID, name: 'Ada', aud: 'x' }))).toEqual({ claimed_tid: TID, claimed_oid: OID });
    expect(readClaimedIdentity(token({ tid: TID }))).toEqual({ claimed_tid: TID });
  });

  it('each claim only when it is an Entra GUID: no text of any other shape reaches a log line', () => {
    for (const bad of ['T'.repeat(4000), `${TID}\n{"audit":true}`, ` ${TID}`, `{${TID}}`, '', 42, null, [TID], { tid: TID }]) {
      expect(readClaimedIdentity(token({ tid: bad, oid: OID }))).toEqual({ claimed_oid: OID });
      expect(readClaimedIdentity(token({ tid: TID, oid: bad }))).toEqual({ claimed_tid: TID });
    }
  });

  it('nothing from a token that is not a JWS of three segments with a JSON object payload', () => {
    for (const bad of [
      '',
      'garbage',
      'aaa.bbb.ccc',
      `${enc({ alg: 'RS256' })}.${enc({ tid: TID, oid: OID })}`,
      `${enc({ alg: 'RS256' })}.${enc({ tid: TID, oid: OID })}.sig.extra.segments`,
      token('not json'),
      token([TID, OID]),
      token('"a string"'),
      token('null'),
      `${enc({ alg: 'RS256' })}.${enc({ tid: TID, oid: OID })}!!.sig`,
      `${enc({ alg: 'RS256' })}.${Buffer.from(JSON.stringify({ tid: TID, oid: OID })).toString('base64')}==.sig`,
    ]) {
      expect(readClaimedIdentity(bad)).toEqual({});
    }
  });

  it(`nothing from a payload segment longer than ${MAX_CLAIMED_PAYLOAD_CHARS} characters (it is not decoded at all)`, () => {
    const padded = (chars: number) => {
      const base = { tid: TID, oid: OID, pad: '' };
      const bare = enc(base).length;
      // base64url: 4 characters per 3 bytes of padding.
      return token({ ...base, pad: 'p'.repeat(Math.floor(((chars - bare) * 3) / 4)) });
    };
    const fits = padded(MAX_CLAIMED_PAYLOAD_CHARS);
    expect(fits.split('.')[1]!.length).toBeLessThanOrEqual(MAX_CLAIMED_PAYLOAD_CHARS);
    expect(readClaimedIdentity(fits)).toEqual({ claimed_tid: TID, claimed_oid: OID });
    const over = padded(MAX_CLAIMED_PAYLOAD_CHARS + 8);
    expect(over.split('.')[1]!.length).toBeGreaterThan(MAX_CLAIMED_PAYLOAD_CHARS);
    expect(readClaimedIdentity(over)).toEqual({});
  });
});

describe('withClaimedIdentity / claimedIdentityOf', () => {
  it('notes the claims on a refusal for its audit record; other errors carry none', () => {
    const err = invalidToken('the signature is not valid');
    expect(withClaimedIdentity(err, token({ tid: TID, oid: OID }))).toBe(err);
    expect(claimedIdentityOf(err)).toEqual({ claimed_tid: TID, claimed_oid: OID });
    expect(claimedIdentityOf(invalidToken('the signature is not valid'))).toEqual({});
    const plain = new Error('boom');
    expect(withClaimedIdentity(plain, token({ tid: TID }))).toBe(plain);
    expect(claimedIdentityOf(plain)).toEqual({});
    expect(claimedIdentityOf(new DomainError(ErrorCode.FORBIDDEN, 'x'))).toEqual({});
  });
});
