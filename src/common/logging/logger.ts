import pino, { Logger } from 'pino';
import { isoNow } from '../time/iso-time';

/** Keys whose value is a credential wherever they appear (header names are lower case in Node). */
const SECRET_KEYS = [
  'authorization',
  'cookie',
  'apiKey',
  'api_key',
  '"api-key"',
  '"x-api-key"',
  'token',
  'access_token',
  'refresh_token',
  'client_secret',
  'password',
];

/**
 * Paths that may hold a credential, at the top level and up to three objects deep
 * (`env.llm.apiKey`, `req.headers.authorization`, `err.request.headers.authorization`). pino
 * replaces them before a line is written, so a bearer token or an API key never reaches a log even
 * when a whole request, error or config object is logged. (pino has no "any depth" wildcard.)
 */
export const REDACTED_PATHS = SECRET_KEYS.flatMap((k) => {
  const key = k.startsWith('"') ? `[${k}]` : `.${k}`;
  return [key.slice(key.startsWith('.') ? 1 : 0), `*${key}`, `*.*${key}`, `*.*.*${key}`];
});

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Normalises upstream names (`warning`, `critical`) to pino levels. */
export function toLogLevel(value: string | undefined): LogLevel | undefined {
  if (value === undefined || value === '') return undefined;
  const v = value.toLowerCase();
  if (v === 'warning') return 'warn';
  if (v === 'critical') return 'fatal';
  return (LOG_LEVELS as readonly string[]).includes(v) ? (v as LogLevel) : undefined;
}

/**
 * Log lines are written to stdout in batches of about this many bytes... Each batch is one write on
 * libuv's thread pool, and waking a pool thread and hearing back from it cost more CPU than the
 * write: with 4 KiB batches (one per ~4 turns) the pool's thread spent ~11 µs of every turn, mostly
 * in futex waits and wake-ups (issue 27, docs/performance.md). Half a pipe's default 64 KiB buffer,
 * so a batch does not fill a pipe whose reader keeps up.
 */
export const LOG_BATCH_BYTES = 32 * 1024;
/** ...or this long (ms) after the first line of a batch, whichever comes first. */
export const LOG_FLUSH_MS = 100;
/** Lines waiting for a stdout that does not keep up are dropped past this many bytes (never blocking a request). */
export const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Stdout, written asynchronously in batches: one system call per LOG_BATCH_BYTES of lines or per
 * LOG_FLUSH_MS, not one per line (a request line is ~700 bytes: at 1,000 requests a second that
 * was a third of the server's socket writes; issue 27). Lines keep their order; `flush` (shutdown)
 * and `flushSync` (pino's exit hook) write out what is pending. No timer runs while nothing is
 * logged.
 *
 * Lines are gathered here and handed to sonic-boom one batch at a time: sonic-boom measures the
 * UTF-8 length of its whole pending buffer on every write it is given (`Buffer.byteLength` of a
 * string grown by `+=`, flattened again each time), which per line cost ~3 % of a turn (issue 27).
 * Here a line costs an array push; sonic-boom sees one string per batch. At most LOG_BATCH_BYTES
 * (UTF-16 units) wait here; sonic-boom's own bound (LOG_BUFFER_MAX_BYTES) applies beyond.
 */
function batchedStdout(): pino.DestinationStream {
  const out = pino.destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES });
  let lines: string[] = [];
  let length = 0;
  let timer: NodeJS.Timeout | undefined;
  const write = out.write.bind(out);
  const handOff = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!lines.length) return;
    const batch = lines.length === 1 ? lines[0]! : lines.join('');
    lines = [];
    length = 0;
    write(batch);
  };
  out.write = (line: string) => {
    lines.push(line);
    length += line.length;
    if (length >= LOG_BATCH_BYTES) handOff();
    else if (!timer) {
      timer = setTimeout(handOff, LOG_FLUSH_MS);
      timer.unref();
    }
    return true;
  };
  const flush = out.flush.bind(out);
  out.flush = (cb?: (err?: Error) => void) => {
    handOff();
    flush(cb);
  };
  const flushSync = out.flushSync.bind(out);
  out.flushSync = () => {
    handOff();
    flushSync();
  };
  return out;
}

/**
 * `mixin` adds fields to every line; the app passes the active trace/span ids so each log line can
 * be joined to its trace.
 */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream, mixin?: () => object): Logger {
  // Stdout is written asynchronously and in batches: a synchronous write per request line cost
  // about a fifth of a request's CPU time in the benchmark (issue 14), one write per line a few
  // per cent more (issue 27). Flushed when the app shuts down.
  destination ??= batchedStdout();
  return pino(
    {
      mixin,
      level,
      base: { service: 'teal-agent-server' },
      // pino's isoTime, through our cached formatter (iso-time.ts): every line is stamped.
      timestamp: () => `,"time":"${isoNow()}"`,
      redact: { paths: REDACTED_PATHS, censor: '[Redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
