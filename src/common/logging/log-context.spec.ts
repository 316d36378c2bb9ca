import { createHash } from 'node:crypto';
import { oidHash } from './log-context';

const sha256Head = (oid: string) => createHash('sha256').update(oid).digest('hex').slice(0, 16);

describe('oidHash', () => {
  it('is the first 16 hex digits of the SHA-256 of the oid, the same on every call', () => {
    expect(oidHash('oid-1')).toBe(sha256Head('oid-1'));
    expect(oidHash('oid-1')).toBe(sha256Head('oid-1'));
    expect(oidHash('')).toBe(sha256Head(''));
    expect(oidHash('ü-oid')).toBe(sha256Head('ü-oid'));
  });

  it('stays right past the memo bound (many distinct callers)', () => {
    for (let i = 0; i < 10_000; i++) expect(oidHash(`caller-${i}`)).toBe(sha256Head(`caller-${i}`));
    expect(oidHash('caller-0')).toBe(sha256Head('caller-0'));
  });
});
