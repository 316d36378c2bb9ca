import { randomUUID } from 'node:crypto';
import { keptBytesEach } from '../../../test/support/kept-heap';
import { newUuid, randomHex } from './uuid.util';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newUuid', () => {
  it('makes version 4 UUIDs, each new (more than one pool of random bytes)', () => {
    const ids = Array.from({ length: 10_000 }, newUuid);
    expect(ids.filter((id) => !V4.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sets the version and variant bits and keeps every other bit random', () => {
    // Over 4,096 ids each random hex digit takes all 16 values; the version digit only 4, the variant's 8-b.
    const ids = Array.from({ length: 4096 }, newUuid).map((id) => id.replaceAll('-', ''));
    const seen = (i: number) => new Set(ids.map((id) => id[i])).size;
    expect(seen(12)).toBe(1);
    expect(new Set(ids.map((id) => id[16]))).toEqual(new Set(['8', '9', 'a', 'b']));
    for (const i of [0, 7, 13, 17, 31]) expect(seen(i)).toBe(16);
  });

  it("holds ~56 bytes of heap a kept id, where crypto.randomUUID's holds ~485 (a tree of concatenated strings)", () => {
    const ours = keptBytesEach(newUuid, 100_000);
    expect(ours).toBeLessThan(100);
    expect(keptBytesEach(randomUUID, 100_000)).toBeGreaterThan(3 * ours); // what this is for: Node's own still makes the tree
  });
});

describe('randomHex', () => {
  it('makes span and trace ids: 16 and 32 lowercase hex digits, every digit random, distinct', () => {
    for (const [bytes, digits] of [
      [8, 16],
      [16, 32],
    ] as const) {
      const ids = Array.from({ length: 4096 }, () => randomHex(bytes));
      for (const id of ids) expect(id).toMatch(new RegExp(`^[0-9a-f]{${digits}}$`));
      expect(new Set(ids).size).toBe(ids.length);
      for (let i = 0; i < digits; i++) expect(new Set(ids.map((id) => id[i])).size).toBe(16);
    }
  });

  it('never an all-zero id (invalid in W3C Trace Context), and ids interleaved with UUIDs from the same pool stay apart', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const span = randomHex(8);
      const uuid = newUuid();
      expect(span).not.toBe('0000000000000000');
      expect(uuid.replaceAll('-', '').startsWith(span)).toBe(false);
      seen.add(span);
    }
    expect(seen.size).toBe(3000);
  });
});
