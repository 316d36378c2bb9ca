import { StateCorruptError } from '../state.errors';

/**
 * A stored record read back (a JSON object as text): JSON that does not parse, or is not an
 * object, is corrupt, and the error names `key` (the Redis key, the PostgreSQL row) while nothing
 * is changed. Shared by the backends that store records as JSON text.
 */
export function parseRecord<T>(key: string, text: string): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new StateCorruptError(key, err);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StateCorruptError(key);
  return value as T;
}
