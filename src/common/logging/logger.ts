import pino, { Logger } from 'pino';

/**
 * Paths that may hold a credential. pino replaces them before a line is written, so a bearer token
 * or an API key never reaches a log even when a whole request or config object is logged.
 */
export const REDACTED_PATHS = [
  'authorization',
  'apiKey',
  'api_key',
  'token',
  'headers.authorization',
  'headers["api-key"]',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["api-key"]',
  'req.headers["x-api-key"]',
  '*.authorization',
  '*.apiKey',
  '*.api_key',
];

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
