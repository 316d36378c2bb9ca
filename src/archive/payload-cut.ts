/** TA_ARCHIVE_MAX_PAYLOAD_BYTES's default: the most a text in an archived event keeps (64 KiB). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;

/**
 * `{ [name]: text }`, or, when the text is longer than `max` UTF-8 bytes, its first `max` bytes (cut
 * on a character boundary) with `{name}_truncated: true` and `{name}_bytes` (its whole size), so a
 * reader of the archive sees that it was cut and by how much.
 */
export function cutField(name: string, text: string | null | undefined, max: number): Record<string, unknown> {
  if (text === undefined) return {};
  if (text === null || text.length * 3 <= max) return { [name]: text };
  const bytes = Buffer.byteLength(text);
  if (bytes <= max) return { [name]: text };
  return { [name]: cutUtf8(text, max), [`${name}_truncated`]: true, [`${name}_bytes`]: bytes };
}

/** The longest prefix of `text` whose UTF-8 encoding fits in `max` bytes. */
function cutUtf8(text: string, max: number): string {
  const buf = Buffer.from(text).subarray(0, max);
  // A character cut in the middle decodes as U+FFFD at the end: drop it.
  const decoded = buf.toString('utf8');
  return decoded.endsWith('\uFFFD') && !text.startsWith(decoded) ? decoded.slice(0, -1) : decoded;
}
