import { authHeaders } from './auth';

/** What `GET /console/config.json` says (src/api/console/console.controller.ts). */
export interface AgentInfo {
  name: string;
  version: string;
  api_version: string;
  prefix: string;
  stateful: boolean;
  description: string;
}
export interface ConsoleConfig {
  auth_mode: 'dev' | 'entra';
  msal: import('./auth').MsalSettings | null;
  agents: AgentInfo[];
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: { title?: string; detail?: string; code?: string } | null,
  ) {
    super(body?.detail ?? body?.title ?? `HTTP ${status}`);
  }
}

export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...authHeaders(), ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (!res.ok) throw new ApiError(res.status, json);
  return json as T;
}

export interface SseEvent {
  event: string;
  id?: string;
  data: Record<string, any>;
}

/**
 * POSTs and reads the answer as server-sent events (EventSource cannot POST nor send a bearer
 * token): each complete frame goes to `onEvent` as it arrives.
 */
export async function postSse(
  url: string,
  body: unknown,
  onEvent: (e: SseEvent) => void,
  signal: AbortSignal,
  headers: Record<string, string> = {},
): Promise<void> {
  await readSse(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }, onEvent, signal);
}

/**
 * GET of an event stream (a bearer token rules out EventSource, which sends no headers). False
 * when the answer is 204: nothing to send (a reattach whose client has seen the outcome).
 */
export function getSse(url: string, onEvent: (e: SseEvent) => void, signal: AbortSignal, headers: Record<string, string> = {}): Promise<boolean> {
  return readSse(url, { method: 'GET', headers }, onEvent, signal);
}

async function readSse(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
  onEvent: (e: SseEvent) => void,
  signal: AbortSignal,
): Promise<boolean> {
  const res = await fetch(url, { ...init, headers: { accept: 'text/event-stream', ...authHeaders(), ...init.headers }, signal });
  if (res.status === 204) return false;
  if (!res.ok || !res.body) {
    const text = await res.text();
    throw new ApiError(res.status, text ? JSON.parse(text) : null);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let id: string | undefined;
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = val;
        else if (field === 'id') id = val;
        else if (field === 'data') data.push(val);
      }
      if (data.length) onEvent({ event, id, data: JSON.parse(data.join('\n')) });
    }
  }
  return true;
}

export function newId(): string {
  if (window.isSecureContext && 'randomUUID' in crypto) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}
