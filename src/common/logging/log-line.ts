import pino, { Level, Logger } from 'pino';

/** A field of a plain line: written as pino writes it; `undefined` leaves the field out. */
export type PlainValue = string | number | boolean | undefined;

const { lsCacheSym, chindingsSym, timeSym, streamSym, endSym, messageKeySym, needsMetadataGsym, hooksSym, formattersSym } = pino.symbols;
/** Not in pino's typings, but among its symbols (pino ≥ 8.14). */
const msgPrefixSym = (pino.symbols as unknown as Record<string, symbol>).msgPrefixSym!;

type PinoInternals = Record<symbol, unknown>;

/**
 * Whether `plainLine` can write for this logger exactly as pino would: no hook, no log formatter,
 * no message prefix, and a destination that does not need pino's per-line metadata (a multistream).
 * A mixin is allowed: the caller passes the fields it would add (see `plainLine`).
 */
function mirrorable(logger: Logger): boolean {
  const l = logger as unknown as PinoInternals;
  const hooks = l[hooksSym] as { logMethod?: unknown; streamWrite?: unknown } | undefined;
  const stream = l[streamSym] as PinoInternals;
  return !hooks?.logMethod && !hooks?.streamWrite && !(l[formattersSym] as { log?: unknown }).log && !l[msgPrefixSym] && !stream[needsMetadataGsym];
}

const MIRRORABLE = new WeakMap<Logger, boolean>();

/** `,"key":` for each field name seen: the names are the callers' constants, a few dozen at most. */
const keyParts = new Map<string, string>();
const KEY_PARTS_MAX = 256;

function keyPart(key: string): string {
  let part = keyParts.get(key);
  if (part === undefined) {
    part = `,${JSON.stringify(key)}:`;
    if (keyParts.size < KEY_PARTS_MAX) keyParts.set(key, part);
  }
  return part;
}

/**
 * Writes one line at `level` with `fields`, byte for byte as `logger[level](fields, msg)` would
 * with the logger's mixin returning nothing (level label, time, bindings, fields in order, the
 * message last, JSON escaping), without pino's general path: no mixin call and merge, no
 * serializers, no redaction. For the per-request line (src/telemetry/http-request-telemetry.ts),
 * whose fields are known, are plain values and never hold a credential (no header, body or query
 * string): through pino it cost ~8 % of a turn's CPU, most of it the general path (issue 27). The
 * caller passes what the mixin would have added as fields of its own. A logger this cannot mirror
 * (hooks, a log formatter, a message prefix, a multistream) gets the line through pino.
 */
export function plainLine(logger: Logger, level: Level, fields: Record<string, PlainValue>, msg: string): void {
  if (!logger.isLevelEnabled(level)) return;
  let ok = MIRRORABLE.get(logger);
  if (ok === undefined) MIRRORABLE.set(logger, (ok = mirrorable(logger)));
  if (!ok) {
    // The mixin's fields come first there, and the caller's (the same ids) win.
    logger[level](fields, msg);
    return;
  }
  const l = logger as unknown as PinoInternals;
  let line = (l[lsCacheSym] as Record<number, string>)[logger.levels.values[level]!]! + (l[timeSym] as () => string)() + (l[chindingsSym] as string);
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined) continue;
    line += `${keyPart(key)}${typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' && !Number.isFinite(value) ? 'null' : String(value)}`;
  }
  line += `,"${l[messageKeySym] as string}":${JSON.stringify(msg)}${l[endSym] as string}`;
  (l[streamSym] as { write(line: string): void }).write(line);
}
