import { Agent as HttpAgent, ClientRequest, IncomingHttpHeaders, IncomingMessage, request as httpRequest, RequestOptions } from 'node:http';
import { urlToHttpOptions } from 'node:url';
import { SseDataParser, SseEventTooLongError } from './sse-data.parser';
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

/**
 * Each endpoint's URL as request options, worked out once: the provider keeps one URL object per
 * model (llm-provider.ts) and never changes it, and Node would otherwise convert it on every call.
 */
const targets = new WeakMap<URL, RequestOptions>();

function targetOf(url: URL): RequestOptions {
  let target = targets.get(url);
  if (!target) targets.set(url, (target = urlToHttpOptions(url)));
  return target;
}

/** A request to the model provider on the kept-alive sockets: every model call. */
export function modelRequest(url: URL, method: string, headers: Record<string, string>): ClientRequest {
  const target = targetOf(url);
  return url.protocol === 'https:'
    ? httpsRequest({ ...target, method, headers, agent: agents.https })
    : httpRequest({ ...target, method, headers, agent: agents.http });
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
  /**
   * The request body: a string, or bytes, or parts of bytes sent one after the other (its
   * content-length their sum), all in the system call that sends the headers. Bytes are not joined
   * to the header string first, as a string body is (the whole conversation's JSON flattened in V8's
   * heap once more to be written), and parts need not be copied into one body.
   */
  body?: string | Buffer | readonly Buffer[];
  /** The whole exchange (connect, send, the answer to its last byte) must end within this. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/** One call under way: its request, and the one place a call fails or ends (timer, abort, first failure wins). */
interface Call {
  req: ClientRequest;
  timer: NodeJS.Timeout;
  /** Ends the call with `err` (the first failure wins): the socket is destroyed. */
  fail(err: Error): void;
  /** What the caller is told of a failure: our own reason (timeout, abort) over the socket error it caused. */
  failureOf(err: Error): Error;
  /** Stops the timer and the abort listener. */
  settle(): void;
  /** The failure the call ended with, if any. */
  failed(): Error | undefined;
}

/** `silence`: the timer bounds each silence (restarted with every chunk by the reader), not the whole call. */
function startCall(url: URL, options: ExchangeOptions, silence = false): Call {
  const { signal } = options;
  const req = modelRequest(url, options.method, options.headers);
  let failure: Error | undefined;
  const fail = (err: Error) => {
    failure ??= err;
    req.destroy(failure);
  };
  const timedOut = silence ? `Nothing came for ${options.timeoutMs} ms` : `No answer within ${options.timeoutMs} ms`;
  const timer = setTimeout(() => fail(new ModelTimeoutError(timedOut)), options.timeoutMs);
  const onAbort = () => fail(new ModelCallAbortedError('The call was aborted', { cause: signal!.reason }));
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    req,
    timer,
    fail,
    failureOf: (err) => failure ?? new ModelConnectionError(`The connection failed: ${err.message}`, { cause: err }),
    settle: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
    failed: () => failure,
  };
}

/** Reads an answer whole (at most MAX_MODEL_ANSWER_BYTES) into an exchange, or rejects with the call's failure. */
function readWhole(call: Call, res: IncomingMessage, resolve: (answer: HttpExchange) => void, reject: (err: Error) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const rejectWith = (err: Error) => {
    call.settle();
    reject(call.failureOf(err));
  };
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_MODEL_ANSWER_BYTES) return call.fail(new ModelConnectionError(`The answer exceeded ${MAX_MODEL_ANSWER_BYTES} bytes`));
    chunks.push(chunk);
  });
  res.on('error', rejectWith);
  res.on('close', () => {
    if (!res.complete) rejectWith(new Error('The connection closed before the answer was complete'));
  });
  res.on('end', () => {
    call.settle();
    const failure = call.failed();
    if (failure) return reject(failure);
    resolve({ status: res.statusCode ?? 500, headers: res.headers, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
  });
}

/**
 * One HTTP request to the model provider and its whole answer, on the kept-alive sockets. Rejects
 * with ModelConnectionError, ModelTimeoutError or ModelCallAbortedError (the socket is destroyed,
 * so the provider sees the call dropped); an HTTP error status is an answer, not a rejection.
 */
export function exchange(url: URL, options: ExchangeOptions): Promise<HttpExchange> {
  return callModel(url, options, false, readWhole);
}

/**
 * Sends one request and hands its answer to `onResponse` (which settles the promise), failing it
 * as the call fails before an answer (an abort before it starts included).
 */
function callModel<T>(
  url: URL,
  options: ExchangeOptions,
  silence: boolean,
  onResponse: (call: Call, res: IncomingMessage, resolve: (value: T) => void, reject: (err: Error) => void) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (options.signal?.aborted) return reject(new ModelCallAbortedError('The call was aborted', { cause: options.signal.reason }));
    const call = startCall(url, options, silence);
    call.req.on('error', (err) => {
      call.settle();
      reject(call.failureOf(err));
    });
    call.req.on('response', (res) => onResponse(call, res, resolve, reject));
    const { body } = options;
    if (Array.isArray(body)) {
      const parts = body as readonly Buffer[];
      call.req.setHeader(
        'content-length',
        parts.reduce((n, part) => n + part.length, 0),
      );
      for (const part of parts) call.req.write(part);
      call.req.end();
    } else call.req.end(body as string | Buffer | undefined);
  });
}

/** A model's answer to a streamed call: a 2xx with its events to read, or an error answer read whole. */
export interface StreamExchange extends HttpExchange {
  /**
   * The `data` of each server-sent event of a 2xx answer, in order, up to `[DONE]`, in batches: each
   * batch the events one read of the socket completed (a model's burst of deltas is one step for
   * every layer above, not one per event). Absent for any other status.
   */
  events?: AsyncGenerator<string[], void, undefined>;
}

/**
 * One streamed request to the model provider, on the kept-alive sockets. Resolves when the answer's
 * headers arrive: an error status with its whole body (as `exchange`), a 2xx with its events to
 * read. `timeoutMs` bounds the wait for the headers and then each silence of the stream (the timer
 * restarts with every chunk), as the SDK's timeout and our stall guard did together. Rejections,
 * before or during the events, are ModelConnectionError, ModelTimeoutError or ModelCallAbortedError;
 * the socket is destroyed on any of them and when the reader stops early, and kept for the next
 * call when the stream ended whole.
 */
export function openEventStream(url: URL, options: ExchangeOptions): Promise<StreamExchange> {
  return callModel<StreamExchange>(url, options, true, (call, res, resolve, reject) => {
    const status = res.statusCode ?? 500;
    if (status < 200 || status >= 300) return readWhole(call, res, resolve, reject);
    resolve({ status, headers: res.headers, body: Buffer.alloc(0), events: eventBatches(res, call) });
  });
}

/**
 * The events of a streamed answer (SseDataParser) as the socket delivers them: pushed by the
 * response's `data` events, taken a batch at a time by the reader. The response is paused while a
 * batch waits to be taken, so a slow reader holds back the socket, not memory. After `[DONE]` the
 * rest of the body is still read, so that the socket can serve the next call. (Node's own async
 * iterator of a stream costs a few promises and listeners per chunk; this is one promise a wait.)
 */
async function* eventBatches(res: IncomingMessage, call: Call): AsyncGenerator<string[], void, undefined> {
  const { timer, fail, failureOf, settle } = call;
  const parser = new SseDataParser();
  let ready: string[] = [];
  let size = 0;
  let ended = false;
  let error: Error | undefined;
  let wake: (() => void) | undefined;
  const rouse = () => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    timer.refresh();
    if (parser.done || error) return;
    size += chunk.length;
    try {
      if (size > MAX_MODEL_ANSWER_BYTES) throw new ModelConnectionError(`The stream exceeded ${MAX_MODEL_ANSWER_BYTES} bytes`);
      const got = parser.push(chunk);
      if (got.length) ready = ready.length ? ready.concat(got) : got;
    } catch (err) {
      error = err instanceof SseEventTooLongError ? new ModelConnectionError(err.message) : (err as Error);
    }
    if (ready.length && !parser.done) res.pause();
    if (ready.length || parser.done || error) rouse();
  });
  res.on('end', () => {
    ended = true;
    rouse();
  });
  res.on('error', (err) => {
    error ??= err;
    rouse();
  });
  res.on('close', () => {
    if (!res.complete) error ??= new Error('The connection closed before the stream was complete');
    rouse();
  });
  try {
    for (;;) {
      if (ready.length) {
        const batch = ready;
        ready = [];
        yield batch;
        res.resume();
        continue;
      }
      if (error) throw error;
      if (ended) break;
      await new Promise<void>((resolve) => (wake = resolve));
    }
    // An event the stream ended without its blank line: the SDK's reader delivers it too.
    const last = parser.end();
    if (last !== undefined) yield [last];
  } catch (err) {
    // After `[DONE]` the answer is whole: a failure reading what follows is not the caller's.
    if (parser.done) return;
    if (err instanceof ModelConnectionError) fail(err);
    throw failureOf(err as Error);
  } finally {
    settle();
    // A reader that stopped early, or a failure: the socket must not serve another call mid-answer.
    if (!res.complete) res.destroy();
  }
}
