import { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { modelRequest } from './http-exchange';

/**
 * The `fetch` the OpenAI SDK calls the model provider with: `node:http(s)` on a keep-alive agent
 * instead of the global fetch (undici). The SDK keeps everything it does (headers, retries,
 * timeouts through the signal, error classes, streaming): only the transport changes. Why: per
 * model call, the global fetch's request and body streams (WHATWG streams over undici) cost about
 * as much CPU as the rest of a plain v3 turn's own work (`npm run bench`, issue 14).
 *
 * A JSON answer is read whole and handed over as a `Response` of its bytes; an event stream is
 * handed over as it arrives. An abort (the SDK's timeout or the caller's cancel) destroys the
 * socket and rejects with the `AbortError` the SDK expects.
 */
export const httpFetch: typeof fetch = (input, init = {}) =>
  new Promise<Response>((resolve, reject) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(abortError(signal));
    const req = modelRequest(url, init.method ?? 'GET', headersOf(init.headers));
    const onAbort = () => req.destroy(abortError(signal!));
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    req.on('error', (err) => {
      done();
      reject(transportError(err));
    });
    req.on('response', (res) => {
      const headers = responseHeaders(res);
      const status = res.statusCode ?? 500;
      const init = { status, statusText: res.statusMessage ?? '', headers };
      // A Response may not carry a body with these statuses.
      if (status === 204 || status === 304 || (init.statusText === '' && status < 200)) {
        res.resume();
        done();
        return resolve(withUrl(new Response(null, init), url));
      }
      if (/^text\/event-stream/i.test(res.headers['content-type'] ?? '')) {
        res.once('close', done);
        return resolve(withUrl(new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, init), url));
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => {
        done();
        reject(transportError(err));
      });
      res.on('end', () => {
        done();
        resolve(withUrl(new Response(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), init), url));
      });
    });
    const body = init.body;
    if (body === undefined || body === null) req.end();
    else if (typeof body === 'string' || body instanceof Uint8Array) req.end(body);
    else if (body instanceof ArrayBuffer) req.end(Buffer.from(body));
    else {
      // Anything else the SDK might send (a form, a stream): let Response encode it.
      new Response(body).arrayBuffer().then(
        (bytes) => req.end(Buffer.from(bytes)),
        (err: unknown) => req.destroy(err as Error),
      );
    }
  });

function headersOf(headers: RequestInit['headers']): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  if (Array.isArray(headers)) return Object.fromEntries(headers);
  return headers as Record<string, string>;
}

function responseHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

/** `Response.url` is read-only and empty for a constructed one: the SDK quotes it in errors. */
function withUrl(response: Response, url: URL): Response {
  Object.defineProperty(response, 'url', { value: url.href });
  return response;
}

/**
 * A socket error as fetch reports one: an Error of this module's realm (the SDK keeps only what is
 * `instanceof Error` as the cause it reports) with the socket's error, and its code, as the cause.
 */
function transportError(err: Error): Error {
  if (err.name === 'AbortError') return err;
  return new TypeError('fetch failed', { cause: err });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  // An Error (not a DOMException, which is none in every realm) named as fetch names it: the SDK
  // tells a timeout or a cancel from a failed connection by that name.
  return Object.assign(new Error('This operation was aborted', { cause: reason }), { name: 'AbortError' });
}
