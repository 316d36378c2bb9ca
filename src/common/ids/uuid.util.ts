import { randomFillSync } from 'node:crypto';

/** Random bytes drawn 2 KiB at a time, as Node's own `randomUUID` buffers them (128 UUIDs' worth). */
const POOL_BYTES = 2048;
const pool = Buffer.alloc(POOL_BYTES);
let taken = POOL_BYTES;

/** Where `n` fresh random bytes begin in `pool` (refilled when fewer are left). */
function randomAt(n: number): number {
  if (taken + n > POOL_BYTES) {
    randomFillSync(pool);
    taken = 0;
  }
  const at = taken;
  taken += n;
  return at;
}
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
  const at = randomAt(16);
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

/** The character codes of an 8- and a 16-byte id's hex digits, reused for each new id. */
const hexCodes = { 8: new Array<number>(16), 16: new Array<number>(32) };

/**
 * `bytes` random bytes as lowercase hex, never all zeros (W3C Trace Context: an all-zero trace or
 * span id is invalid), from the same pool as `newUuid`, and one flat string. Spans take their ids
 * here: a digit from `Math.random()` each cost 48 calls for a span and its trace (issue 27).
 */
export function randomHex(bytes: 8 | 16): string {
  const codes = hexCodes[bytes];
  for (;;) {
    const at = randomAt(bytes);
    let nonZero = 0;
    for (let i = 0; i < bytes; i++) {
      const byte = pool[at + i]!;
      nonZero |= byte;
      codes[2 * i] = HEX.charCodeAt(byte >> 4);
      codes[2 * i + 1] = HEX.charCodeAt(byte & 0x0f);
    }
    if (nonZero) return String.fromCharCode.apply(null, codes);
  }
}
