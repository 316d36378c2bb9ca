/** DI tokens for values that are not classes. */
export const ENV_CONFIG = Symbol('ENV_CONFIG');
export const AGENTS = Symbol('AGENTS');
export const LOGGER = Symbol('LOGGER');
export const TELEMETRY = Symbol('TELEMETRY');
/** The audit archive (src/archive/archive-sink.ts), or null when TA_ARCHIVE_URL is unset. */
export const ARCHIVE = Symbol('ARCHIVE');
