/** Image media types every supported model provider accepts inline. */
export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;

const DATA_URI_PARTS = /^data:([^;,]*);base64,([\s\S]*)$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * What is wrong with an image item's `content`, or undefined when it is fine: an inline
 * `data:<type>;base64,<data>` URI (a URL would make the server fetch on the caller's behalf), of a
 * type in IMAGE_MEDIA_TYPES, whose data is non-empty, well-formed base64 (whitespace allowed).
 */
export function imageDataUriProblem(value: unknown): string | undefined {
  const parts = typeof value === 'string' ? DATA_URI_PARTS.exec(value) : null;
  if (!parts || !parts[1].toLowerCase().startsWith('image/')) return 'an image item must be a data:image/...;base64, URI';
  const type = parts[1].toLowerCase();
  if (!(IMAGE_MEDIA_TYPES as readonly string[]).includes(type)) {
    return `an image item's media type must be one of ${IMAGE_MEDIA_TYPES.join(', ')} (got ${JSON.stringify(parts[1].slice(0, 40))})`;
  }
  const data = parts[2].replace(/\s+/g, '');
  if (!data || data.length % 4 !== 0 || !BASE64.test(data)) return `an image item's data is not valid base64`;
  return undefined;
}
