import type { JsonSchema, RiskLevel, ToolContext } from '../tool.port';

/**
 * The shape of a plugin module (docs/tools.md). A module (`.ts`, `.js`, `.cjs` or `.mjs`) exports
 * `plugins`, an array of these (or a default export of the same array). It needs nothing from this
 * server at run time; `import type { PluginDefinition } from '<server>/src/tools/plugins/plugin.types'`
 * is enough to have it type-checked.
 *
 * ```ts
 * export const plugins: PluginDefinition[] = [{
 *   name: 'WeatherPlugin',
 *   tools: [{
 *     name: 'get_forecast',
 *     description: 'Forecast for a city',
 *     parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
 *     risk: 'read_only',
 *     handler: async ({ city }, { signal }) => `Sunny in ${city}`,
 *   }],
 * }];
 * ```
 */
export interface PluginDefinition {
  /** What agents list in `spec.agent.plugins`; letters, digits and `_`. */
  name: string;
  description?: string;
  /** Give the handlers the caller's bearer token (`ctx.bearerToken`); without it they never see it. */
  forward_token?: boolean;
  tools: PluginToolDefinition[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface PluginToolDefinition<Args extends Record<string, unknown> = Record<string, any>> {
  /** The function name; the model sees `{plugin}-{name}`. */
  name: string;
  description: string;
  /** JSON schema of the arguments object (default: no arguments). Checked before every call. */
  parameters?: JsonSchema;
  /** Default `write_high_risk`: an undeclared tool is treated as the riskiest kind. */
  risk?: RiskLevel;
  requires_hitl?: boolean;
  /** Safe to repeat after a timeout (default: true for read_only tools only). */
  idempotent?: boolean;
  /** Per-call timeout in ms (default TA_TOOL_TIMEOUT_MS). */
  timeout_ms?: number;
  /**
   * Receives validated arguments and the call context (AbortSignal, caller, token when forwarded).
   * Returns the result: a string as is, anything else as JSON. Throwing makes an error result; an
   * error with `retryable: true` is retried with backoff.
   */
  handler(args: Args, ctx: ToolContext): unknown;
}
