/** DI tokens for values that are not classes. */
export const ENV_CONFIG = Symbol('ENV_CONFIG');
export const AGENTS = Symbol('AGENTS');
export const LOGGER = Symbol('LOGGER');
export const TELEMETRY = Symbol('TELEMETRY');
