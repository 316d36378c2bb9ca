import pino, { Logger } from 'pino';

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
 * `mixin` adds fields to every line; the app passes the active trace/span ids so each log line can
 * be joined to its trace.
 */
export function createLogger(level: LogLevel, destination?: pino.DestinationStream, mixin?: () => object): Logger {
  // Stdout is written asynchronously: a synchronous write per request line cost about a fifth of a
  // request's CPU time in the benchmark. Lines still go out at once (no batching), in order, and
  // are flushed when the app shuts down.
  destination ??= pino.destination({ dest: 1, sync: false });
  return pino(
    {
      mixin,
      level,
      base: { service: 'teal-agent-server' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[Redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
