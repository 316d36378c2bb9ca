import { Agent as HttpAgent, ClientRequest, IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * Sockets kept open per model origin, each reused for call after call (keep-alive). Sized for the
 * concurrency one replica serves; calls beyond it wait for a free socket. Documented in
 * docs/configuration.md (the model provider).
 */
export const MODEL_SOCKETS_PER_ORIGIN = 256;
/** An idle kept-alive socket is closed after this long (ms). */
const IDLE_SOCKET_MS = 30_000;
/**
 * The largest answer read from the model provider (bytes). A chat completion is a few KiB, a
 * long one a few MiB; anything near this is a broken or hostile endpoint, not an answer.
 */
export const MAX_MODEL_ANSWER_BYTES = 64 * 1024 * 1024;

const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: MODEL_SOCKETS_PER_ORIGIN, maxFreeSockets: 64, timeout: IDLE_SOCKET_MS }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: MODEL_SOCKETS_PER_ORIGIN, maxFreeSockets: 64, timeout: IDLE_SOCKET_MS }),
};

/** A request to the model provider on the kept-alive sockets: every model call (this module and http-fetch.ts). */
export function modelRequest(url: URL, method: string, headers: Record<string, string>): ClientRequest {
  return url.protocol === 'https:' ? httpsRequest(url, { method, headers, agent: agents.https }) : httpRequest(url, { method, headers, agent: agents.http });
}

export interface HttpExchange {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The provider could not be reached, or the connection failed before the whole answer came. */
export class ModelConnectionError extends Error {
  override readonly name = 'ModelConnectionError';
}

/** No whole answer within the call's time limit. */
export class ModelTimeoutError extends Error {
  override readonly name = 'ModelTimeoutError';
}

/** The caller's signal ended the call. */
export class ModelCallAbortedError extends Error {
  override readonly name = 'ModelCallAbortedError';
}

export interface ExchangeOptions {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** The whole exchange (connect, send, the answer to its last byte) must end within this. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * One HTTP request to the model provider and its whole answer, on the kept-alive sockets. Rejects
 * with ModelConnectionError, ModelTimeoutError or ModelCallAbortedError (the socket is destroyed,
 * so the provider sees the call dropped); an HTTP error status is an answer, not a rejection.
 */
export function exchange(url: URL, options: ExchangeOptions): Promise<HttpExchange> {
  return new Promise<HttpExchange>((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) return reject(new ModelCallAbortedError('The call was aborted', { cause: signal.reason }));
    const req = modelRequest(url, options.method, options.headers);
    let failure: Error | undefined;
    const fail = (err: Error) => {
      failure ??= err;
      req.destroy(failure);
    };
    const timer = setTimeout(() => fail(new ModelTimeoutError(`No answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    const onAbort = () => fail(new ModelCallAbortedError('The call was aborted', { cause: signal!.reason }));
    signal?.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const rejectWith = (err: Error) => {
      settle();
      // Our own reasons (timeout, abort) win over the socket error they caused.
      reject(failure ?? new ModelConnectionError(`The connection failed: ${err.message}`, { cause: err }));
    };
    req.on('error', rejectWith);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_MODEL_ANSWER_BYTES) return fail(new ModelConnectionError(`The answer exceeded ${MAX_MODEL_ANSWER_BYTES} bytes`));
        chunks.push(chunk);
      });
      res.on('error', rejectWith);
      res.on('close', () => {
        if (!res.complete) rejectWith(new Error('The connection closed before the answer was complete'));
      });
      res.on('end', () => {
        settle();
        if (failure) return reject(failure);
        resolve({ status: res.statusCode ?? 500, headers: res.headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
      });
    });
    req.end(options.body);
  });
}
