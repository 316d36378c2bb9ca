import { randomFillSync } from 'node:crypto';

/** UUIDs whose random bytes are drawn at once, as Node's own `randomUUID` buffers them. */
const POOLED = 128;
const pool = Buffer.alloc(16 * POOLED);
let taken = POOLED;
/** One UUID's 36 character codes, dashes in place, made into one string at the end. */
const codes: number[] = new Array<number>(36).fill(0x2d);
/** Where the two hex digits of each of the 16 bytes go (dashes at 8, 13, 18 and 23). */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const HEX = '0123456789abcdef';

/**
 * A random (version 4) UUID, as `crypto.randomUUID()` makes it (the same random source and bits),
 * but one flat string. Node's builds its 36 characters by concatenating 20 pieces, which V8 keeps
 * as a tree of ~16 string objects until something reads it whole: ~485 bytes of heap where the
 * text needs ~56, and a flattening whenever it is serialized. Ids are made on every turn and kept
 * with the task (the in-memory store holds them as they are), so the tree cost allocation on each
 * turn and marking at each major GC for as long as the task lived (issue 27).
 */
export function newUuid(): string {
  if (taken === POOLED) {
    randomFillSync(pool);
    taken = 0;
  }
  const at = 16 * taken++;
  for (let i = 0; i < 16; i++) {
    let byte = pool[at + i]!;
    if (i === 6)
      byte = (byte & 0x0f) | 0x40; // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // the RFC 4122 variant
    codes[AT[i]!] = HEX.charCodeAt(byte >> 4);
    codes[AT[i]! + 1] = HEX.charCodeAt(byte & 0x0f);
  }
  // One call with all the codes: V8 makes a flat string of them (never a concatenation tree).
  return String.fromCharCode.apply(null, codes);
}
