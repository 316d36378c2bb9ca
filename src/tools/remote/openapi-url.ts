import { ToolError } from '../tool-error';
import type { OperationParameter } from './openapi-operations';

/** What an OpenAPI operation's arguments become on the wire. */
export interface OpenApiRequestTarget {
  url: URL;
  headers: Record<string, string>;
}

/**
 * Builds the request URL and parameter headers of one call, or throws a ToolError (nothing is sent).
 * - path parameters (style `simple`): each value is percent-encoded as exactly one segment
 *   (`/`, `?`, `#`, `%`, spaces, unicode all encoded); an empty value or a dot-segment (`.`, `..`,
 *   also percent-encoded as `%2e`) is refused, since it would move the call to another path;
 * - query parameters (style `form`, explode): `name=value` percent-encoded, an array repeats the
 *   name, an object gives one pair per property;
 * - header parameters (style `simple`): arrays and objects comma-joined; control characters and
 *   characters outside Latin-1 are refused.
 */
export function buildRequestTarget(
  serverUrl: string,
  pathTemplate: string,
  parameters: readonly OperationParameter[],
  args: Record<string, unknown>,
): OpenApiRequestTarget {
  const base = new URL(serverUrl.replace(/\/+$/, '') + '/');
  const headers: Record<string, string> = {};
  const query: string[] = [];
  let path = pathTemplate;
  for (const p of parameters) {
    const v = args[p.name];
    if (v === undefined || v === null) continue;
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(pathSegment(p.name, v));
    else if (p.in === 'query') query.push(...queryPairs(p.name, v));
    else headers[p.name.toLowerCase()] = headerValue(p.name, v);
  }
  const missing = /\{([^}]+)\}/.exec(path);
  if (missing) throw new ToolError(`path parameter "${missing[1]}" is required`);
  const url = new URL(path.replace(/^\/+/, ''), base);
  // Defence in depth: the call stays under the server URL's path.
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) {
    throw new ToolError(`the arguments would move the call outside ${base.href}`);
  }
  url.search = query.join('&');
  return { url, headers };
}

/** One path segment: percent-encoded; empty values and dot-segments refused. */
export function pathSegment(name: string, value: unknown): string {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    throw new ToolError(`path parameter "${name}" must be a string, number or boolean`);
  }
  const raw = Array.isArray(value) ? value.map(scalarText).join(',') : scalarText(value);
  let decoded = raw;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    // not percent-encoded text: checked as it is
  }
  if (raw === '' || isDotSegment(raw) || isDotSegment(decoded)) {
    throw new ToolError(`path parameter "${name}" must not be empty, "." or ".." (got ${JSON.stringify(raw)})`);
  }
  return encodeURIComponent(raw);
}

function isDotSegment(s: string): boolean {
  return s === '.' || s === '..';
}

function queryPairs(name: string, value: unknown): string[] {
  const pair = (k: string, v: unknown) => `${encodeURIComponent(k)}=${encodeURIComponent(scalarText(v))}`;
  if (Array.isArray(value)) return value.map((item) => pair(name, item));
  if (typeof value === 'object' && value !== null) return Object.entries(value).map(([k, v]) => pair(k, v));
  return [pair(name, value)];
}

function headerValue(name: string, value: unknown): string {
  const text = Array.isArray(value)
    ? value.map(scalarText).join(',')
    : typeof value === 'object' && value !== null
      ? Object.entries(value)
          .flatMap(([k, v]) => [k, scalarText(v)])
          .join(',')
      : scalarText(value);
  // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
  if (/[\x00-\x1f\x7f]|[^\x00-\xff]/.test(text)) {
    throw new ToolError(`header parameter "${name}" must not contain control characters or characters outside Latin-1`);
  }
  return text;
}

function scalarText(v: unknown): string {
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
}
