/**
 * The CORS policy of every route (docs/api.md, CORS), in one place: which origins may call from a
 * browser (TA_CORS_ORIGINS), and what a preflight answers. Credentials are never allowed: callers
 * authenticate with a bearer token they send themselves, never with cookies.
 */

/** What TA_CORS_ORIGINS parsed to. */
export interface CorsConfig {
  /** `*`: any origin (refused at boot unless TA_AUTH_MODE=dev). */
  anyOrigin: boolean;
  /** Serialized origins (`https://app.example.com`, `http://localhost:5173`), as browsers send `Origin`. */
  origins: string[];
}

export const CORS_OFF: CorsConfig = { anyOrigin: false, origins: [] };

/** The methods the routes use (PUT and PATCH included, so a route added later is not a browser-only failure). */
export const CORS_ALLOW_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Request headers a browser may send. `Accept` and `Content-Type` are listed because their useful
 * values (`text/event-stream`, `application/json`) are not CORS-safelisted; `Idempotency-Key` and
 * `Prefer` for retries and background runs; `Mcp-Session-Id` and `Mcp-Protocol-Version` for MCP
 * clients (docs/mcp.md); `A2A-Version` and `A2A-Extensions` for A2A clients (docs/a2a.md); `X-Dev-User` only in dev mode.
 */
export const CORS_ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'Accept',
  'Last-Event-ID',
  'X-Request-Id',
  'traceparent',
  'tracestate',
  'Idempotency-Key',
  'Prefer',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'A2A-Version',
  'A2A-Extensions',
];
export const CORS_DEV_HEADERS = ['X-Dev-User'];

/** Response headers a browser script may read besides the safelisted ones. */
export const CORS_EXPOSE_HEADERS = [
  'Retry-After',
  'X-Request-Id',
  'WWW-Authenticate',
  'traceresponse',
  'Location',
  'RateLimit-Policy',
  'RateLimit',
  'Preference-Applied',
  'Mcp-Session-Id',
];

/** Seconds a browser may cache a preflight answer (Chromium caps it at 7200, Firefox at 86400). */
export const CORS_MAX_AGE_SECONDS = 600;

const ORIGIN_SHAPE = /^https?:\/\/(\[[0-9a-f:.]+\]|[a-z0-9-]+(\.[a-z0-9-]+)*\.?)(:\d{1,5})?$/i;

/** `scheme://host[:port]` with http(s), nothing after it (not even `/`), a port up to 65535. */
export function isOrigin(value: string): boolean {
  if (!ORIGIN_SHAPE.test(value)) return false;
  try {
    return new URL(value).origin !== 'null';
  } catch {
    return false;
  }
}

/** TA_CORS_ORIGINS after splitting: `*` alone, or origins only. */
export function isCorsOriginList(value: unknown): boolean {
  if (!Array.isArray(value) || value.length === 0) return false;
  if (value.length === 1 && value[0] === '*') return true;
  return value.every((v) => typeof v === 'string' && isOrigin(v));
}

export const CORS_ORIGINS_EXPECTED =
  'a comma-separated list of origins, each scheme://host[:port] with no path (https://app.example.com,http://localhost:5173), or * alone';

/** The validated list as the middleware reads it: origins serialized as browsers do (lower case, no default port). */
export function corsConfigOf(list: string[] | undefined): CorsConfig {
  if (!list?.length) return CORS_OFF;
  if (list.length === 1 && list[0] === '*') return { anyOrigin: true, origins: [] };
  return { anyOrigin: false, origins: [...new Set(list.map((o) => new URL(o).origin))] };
}
