import { ClientRequest, IncomingMessage, request as httpRequest } from 'node:http';

/**
 * Reads a server-sent-event response as raw text, so tests can assert the wire bytes exactly and
 * react to what has arrived so far (event-driven, no sleeps). Uses node:http with a connection of
 * its own (no pooling, `Connection: close`): `fetch`'s pool may keep or pre-open connections that
 * then hold the server's shutdown until their keep-alive expires.
 */

export interface SseEvent {
  event?: string;
  id?: string;
  data: string;
  /** Comment lines (`: keepalive`) are kept as events with `comment` set. */
  comment?: string;
}

export interface SseReader {
  status: number;
  headers: Headers;
  /** Everything received so far. */
  text: () => string;
  /** Reads until `done(textSoFar)` holds; rejects if the stream ends first. */
  readUntil: (done: (text: string) => boolean) => Promise<string>;
  /** Reads to the end of the body and returns the whole text. */
  readAll: () => Promise<string>;
  /** Drops the connection, as a client that goes away. */
  abort: () => void;
}

/** POSTs `body` and resolves once the response headers arrived. */
export async function openSse(url: string, body: unknown, headers: Record<string, string> = {}): Promise<SseReader> {
  return readSse(post(url, body, { accept: 'text/event-stream', ...headers }));
}

/** GETs an event stream (`GET /tasks/{id}/stream`) and resolves once the response headers arrived. */
export async function getSse(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
  return readSse(send('GET', url, undefined, { accept: 'text/event-stream', ...headers }));
}

async function readSse({ req, response }: { req: ClientRequest; response: Promise<IncomingMessage> }): Promise<SseReader> {
  const res = await response;
  res.setEncoding('utf8');
  let text = '';
  let ended = false;
  const changed = new Set<() => void>();
  const notify = () => changed.forEach((f) => f());
  res.on('data', (chunk: string) => {
    text += chunk;
    notify();
  });
  res.on('close', () => {
    ended = true;
    notify();
  });
  const waitFor = (done: (t: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (done(text)) {
          changed.delete(check);
          resolve(text);
        } else if (ended) {
          changed.delete(check);
          reject(new Error(`stream ended before the expected content; got:\n${text}`));
        }
      };
      changed.add(check);
      check();
    });
  const h = new Headers();
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
  return {
    status: res.statusCode ?? 0,
    headers: h,
    text: () => text,
    readUntil: waitFor,
    readAll: () => new Promise<string>((resolve) => (ended ? resolve(text) : res.on('close', () => resolve(text)))),
    abort: () => req.destroy(),
  };
}

/** Starts a JSON POST and returns a way to drop it, as a client that goes away before any byte. */
export function startPost(url: string, body: unknown): { drop: () => void; settled: Promise<void> } {
  const { req, response } = post(url, body, {});
  const settled = response.then(
    (res) => new Promise<void>((resolve) => res.resume().on('close', resolve)),
    () => undefined,
  );
  return { drop: () => req.destroy(), settled };
}

function post(url: string, body: unknown, headers: Record<string, string>) {
  return send('POST', url, JSON.stringify(body), { 'content-type': 'application/json', ...headers });
}

function send(method: string, url: string, body: string | undefined, headers: Record<string, string>) {
  const req = httpRequest(url, { method, agent: false, headers });
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.on('response', resolve);
    req.on('error', reject);
  });
  response.catch(() => undefined); // a dropped request is expected to fail; callers decide
  req.end(body);
  return { req, response };
}

/** Splits raw SSE text into events (blank-line separated), keeping comments. */
export function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const ev: SseEvent = { data: '' };
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) ev.comment = line.slice(1).trim();
        else if (line.startsWith('event: ')) ev.event = line.slice(7);
        else if (line.startsWith('id: ')) ev.id = line.slice(4);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      ev.data = data.join('\n');
      return ev;
    });
}
