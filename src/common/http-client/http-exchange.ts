import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { HTTP_TOKEN, Http1ParseError, Http1ResponseParser, ResponseHead } from './http1-response.parser';
import { OriginSockets, SocketUser } from './origin-sockets';
import { SseDataParser, SseEventTooLongError } from './sse-data.parser';

/**
 * Sockets kept open per origin (a model provider, DynamoDB), each reused for call after call (keep-alive). Sized for the
 * concurrency one replica serves; calls beyond it wait for a free socket. Documented in
 * docs/configuration.md (the model provider).
 */
export const SOCKETS_PER_ORIGIN = 256;
/** An idle kept-alive socket is closed after this long (ms). */
const IDLE_SOCKET_MS = 30_000;
/**
 * The largest answer read (bytes). A chat completion is a few KiB, a
 * long one a few MiB; anything near this is a broken or hostile endpoint, not an answer.
 */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** Idle kept-alive sockets kept per origin (more are closed as calls release them). */
const IDLE_SOCKETS_PER_ORIGIN = 64;

/** Each origin's kept-alive sockets (origin-sockets.ts), made on its first call: one per origin the configuration names (models, DynamoDB). */
const origins = new Map<string, OriginSockets>();

/**
 * The same by URL object: the callers keep one per endpoint and never change it (see `preambles`),
 * and `url.origin` builds a new string on every read (~0.5 % of a turn; issue 27).
 */
const socketsByUrl = new WeakMap<URL, OriginSockets>();

function socketsOf(url: URL): OriginSockets {
  let sockets = socketsByUrl.get(url);
  if (sockets) return sockets;
  sockets = origins.get(url.origin);
  if (!sockets) {
    sockets = new OriginSockets(url, { max: SOCKETS_PER_ORIGIN, maxIdle: IDLE_SOCKETS_PER_ORIGIN, idleMs: IDLE_SOCKET_MS });
    origins.set(url.origin, sockets);
  }
  socketsByUrl.set(url, sockets);
  return sockets;
}

/**
 * Each endpoint's request line and Host header, worked out once: the provider keeps one URL object
 * per model (llm-provider.ts) and never changes it.
 */
const preambles = new WeakMap<URL, string>();

/** Header values as Node's own client accepts them (names: HTTP_TOKEN): no CR, LF or NUL (no header injection). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Each frozen headers object's lines, checked and written once: the provider's headers for a model
 * never change (llm-provider.ts freezes them). Any other object is checked on every call.
 */
const headerBlocks = new WeakMap<Record<string, string>, string>();

/** The call's header lines; ours (length, connection, host) are left out, written by requestHead. */
function headerBlock(headers: Record<string, string>): string {
  let block = headerBlocks.get(headers);
  if (block !== undefined) return block;
  block = '';
  for (const name in headers) {
    const value = headers[name]!;
    if (!HTTP_TOKEN.test(name) || !HEADER_VALUE.test(value)) throw new TypeError(`Invalid character in header ${JSON.stringify(name)}`);
    const lower = name.toLowerCase();
    if (lower === 'content-length' || lower === 'connection' || lower === 'host' || lower === 'transfer-encoding') continue;
    block += `${name}: ${value}\r\n`;
  }
  if (Object.isFrozen(headers)) headerBlocks.set(headers, block);
  return block;
}

/** The request's head: request line, Host, the call's headers, its length, keep-alive. */
function requestHead(url: URL, method: string, headers: Record<string, string>, length: number): string {
  let preamble = preambles.get(url);
  if (preamble === undefined) preambles.set(url, (preamble = ` ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`));
  return `${method}${preamble}${headerBlock(headers)}Content-Length: ${length}\r\nConnection: keep-alive\r\n\r\n`;
}

export interface HttpExchange {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The provider could not be reached, or the connection failed before the whole answer came. */
export class HttpConnectionError extends Error {
  override readonly name = 'HttpConnectionError';
}

/** No whole answer within the call's time limit. */
export class HttpTimeoutError extends Error {
  override readonly name = 'HttpTimeoutError';
}

/** The caller's signal ended the call. */
export class HttpCallAbortedError extends Error {
  override readonly name = 'HttpCallAbortedError';
}

const abortedBy = (signal: AbortSignal) => new HttpCallAbortedError('The call was aborted', { cause: signal.reason });

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

/** What a call hears of its answer: its head, then its body's bytes, then its end (or a failure). */
interface AnswerSink {
  head(call: Call, head: ResponseHead): void;
  body(chunk: Buffer): void;
  end(): void;
}

/**
 * One call under way: the one place it fails or ends (timer, abort, the connection, first failure
 * wins). A call that fails destroys its socket; one whose answer was read whole gives it back for
 * the next call, kept alive when the server keeps it.
 */
class Call implements SocketUser {
  readonly timer: NodeJS.Timeout;
  private socket?: Socket;
  private failure?: Error;
  private settled = false;
  private released = false;
  private readonly sockets: OriginSockets;
  private readonly parser: Http1ResponseParser;
  private readonly claim;
  private readonly onAbort?: () => void;
  /** What the failure is told to: the promise's reject until an answer began, then the reader's. */
  onFailure: (err: Error) => void;

  constructor(
    sockets: OriginSockets,
    url: URL,
    private readonly options: ExchangeOptions,
    silence: boolean,
    private readonly sink: AnswerSink,
    reject: (err: Error) => void,
  ) {
    const { signal, body } = options;
    // Thrown here, the caller's promise rejects with nothing sent and no socket taken.
    if (signal?.aborted) throw abortedBy(signal);
    const parts =
      body === undefined ? [] : Array.isArray(body) ? (body as readonly Buffer[]) : [typeof body === 'string' ? Buffer.from(body) : (body as Buffer)];
    let length = 0;
    for (const part of parts) length += part.length;
    const head = requestHead(url, options.method, options.headers, length);
    this.sockets = sockets;
    this.onFailure = reject;
    const timedOut = silence ? `Nothing came for ${options.timeoutMs} ms` : `No answer within ${options.timeoutMs} ms`;
    this.timer = setTimeout(() => this.fail(new HttpTimeoutError(timedOut)), options.timeoutMs);
    if (signal) {
      this.onAbort = () => this.fail(abortedBy(signal));
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
    this.parser = new Http1ResponseParser({ head: (h) => sink.head(this, h), body: (chunk) => sink.body(chunk), end: () => this.answered() });
    this.claim = sockets.claim((socket) => this.send(socket, head, parts));
  }

  /** Ends the call with `err` (the first failure wins): the socket is destroyed. */
  fail(err: Error): void {
    if (this.failure || this.released) return;
    this.failure = err;
    this.settle();
    this.claim.cancel();
    this.release(false);
    this.onFailure(err);
  }

  /** What the caller is told of a socket's failure: our own reason (timeout, abort) over the socket error it caused. */
  failureOf(err: Error): Error {
    return this.failure ?? (err instanceof HttpConnectionError ? err : new HttpConnectionError(`The connection failed: ${err.message}`, { cause: err }));
  }

  /** The failure the call ended with, if any. */
  failed(): Error | undefined {
    return this.failure;
  }

  /** Stops the timer and the abort listener. */
  settle(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    if (this.onAbort) this.options.signal!.removeEventListener('abort', this.onAbort);
  }

  /** Stops reading the socket until `resume` (a slow reader holds back the socket, not memory). */
  pause(): void {
    this.socket?.pause();
  }

  resume(): void {
    if (!this.released) this.socket?.resume();
  }

  /** The answer was read whole. */
  get complete(): boolean {
    return this.parser.done;
  }

  /** A reader that stops before the end: the socket must not serve another call mid-answer. */
  abandon(): void {
    this.settle();
    this.release(false);
  }

  private send(socket: Socket, head: string, parts: readonly Buffer[]): void {
    this.socket = socket;
    OriginSockets.use(socket, this);
    socket.resume();
    // One system call: the head and every part of the body (net.Socket joins corked writes in one writev).
    socket.cork();
    socket.write(head, 'latin1');
    for (const part of parts) socket.write(part);
    socket.uncork();
  }

  onData(chunk: Buffer): void {
    try {
      this.parser.push(chunk);
    } catch (err) {
      this.fail(err instanceof Http1ParseError ? new HttpConnectionError(`The answer was not valid HTTP: ${err.message}`, { cause: err }) : (err as Error));
    }
  }

  onEnd(): void {
    if (!this.parser.end()) this.cutShort();
  }

  onError(err: Error): void {
    this.fail(this.failureOf(err));
  }

  onClose(): void {
    if (!this.parser.done) this.cutShort();
  }

  /** The connection ended before the whole answer: before its head came (as Node's client says it), or after. */
  private cutShort(): void {
    this.fail(this.failureOf(new Error(this.parser.started ? 'The connection closed before the answer was complete' : 'socket hang up')));
  }

  private answered(): void {
    if (this.failure) return;
    this.settle();
    const reusable = this.parser.reusable;
    // Given back before the reader hears the end: the reader may make its next call at once.
    this.release(reusable);
    this.sink.end();
  }

  private release(reusable: boolean): void {
    if (this.released) return;
    this.released = true;
    const socket = this.socket;
    if (!socket) return;
    // A socket given back must not stay paused by a reader that paused it.
    if (reusable) socket.resume();
    this.sockets.release(socket, reusable);
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * An answer as the caller gets it: its headers still made only if read (ResponseHead.headers). A
 * class, so the getter is its prototype's: an object literal with a getter is built by V8's slow
 * path on every call (~0.5 % of a turn; issue 27).
 */
class Answer implements StreamExchange {
  readonly status: number;
  constructor(
    private readonly head: ResponseHead,
    readonly body: Buffer,
    readonly events?: AsyncGenerator<string[], void, undefined>,
  ) {
    this.status = head.status;
  }

  get headers(): IncomingHttpHeaders {
    return this.head.headers;
  }
}

function answerOf(head: ResponseHead, body: Buffer, events?: AsyncGenerator<string[], void, undefined>): StreamExchange {
  return new Answer(head, body, events);
}

/** Reads an answer whole (at most MAX_ANSWER_BYTES) into an exchange. */
function readWhole(resolve: (answer: HttpExchange) => void): AnswerSink {
  const chunks: Buffer[] = [];
  let size = 0;
  let call: Call;
  let head: ResponseHead;
  return {
    head: (c, h) => {
      call = c;
      head = h;
    },
    body: (chunk) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) return call.fail(new HttpConnectionError(`The answer exceeded ${MAX_ANSWER_BYTES} bytes`));
      chunks.push(chunk);
    },
    end: () => resolve(answerOf(head, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))),
  };
}

/**
 * One HTTP request and its whole answer, on the origin's kept-alive sockets (the model client's calls, the DynamoDB store's). Rejects
 * with HttpConnectionError, HttpTimeoutError or HttpCallAbortedError (the socket is destroyed,
 * so the provider sees the call dropped); an HTTP error status is an answer, not a rejection.
 */
export function exchange(url: URL, options: ExchangeOptions): Promise<HttpExchange> {
  return new Promise((resolve, reject) => void new Call(socketsOf(url), url, options, false, readWhole(resolve), reject));
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
 * One streamed request (a model's), on the origin's kept-alive sockets. Resolves when the answer's
 * headers arrive: an error status with its whole body (as `exchange`), a 2xx with its events to
 * read. `timeoutMs` bounds the wait for the headers and then each silence of the stream (the timer
 * restarts with every chunk), as the SDK's timeout and our stall guard did together. Rejections,
 * before or during the events, are HttpConnectionError, HttpTimeoutError or HttpCallAbortedError;
 * the socket is destroyed on any of them and when the reader stops early, and kept for the next
 * call when the stream ended whole.
 */
export function openEventStream(url: URL, options: ExchangeOptions): Promise<StreamExchange> {
  return new Promise((resolve, reject) => {
    let sink: Pick<AnswerSink, 'body' | 'end'> | undefined;
    const streamed = new EventReader();
    new Call(
      socketsOf(url),
      url,
      options,
      true,
      {
        head: (call, head) => {
          if (head.status < 200 || head.status >= 300) {
            const whole = readWhole(resolve);
            sink = whole;
            return whole.head(call, head);
          }
          sink = streamed;
          resolve(answerOf(head, EMPTY, streamed.follow(call)));
        },
        body: (chunk) => sink!.body(chunk),
        end: () => sink!.end(),
      },
      reject,
    );
  });
}

/**
 * The events of a streamed answer (SseDataParser) as the socket delivers them: pushed by the body's
 * bytes, taken a batch at a time by the reader. The socket is paused while a batch waits to be
 * taken, so a slow reader holds back the socket, not memory. After `[DONE]` the rest of the body is
 * still read, so that the socket can serve the next call. (One promise a wait, none per chunk.)
 */
class EventReader implements Pick<AnswerSink, 'body' | 'end'> {
  private readonly parser = new SseDataParser();
  private readonly decoder = new StringDecoder('utf8');
  private ready: string[] = [];
  private size = 0;
  private ended = false;
  private error?: Error;
  private wake?: () => void;
  private call?: Call;

  /** The reader's events of `call`: from here a failure of the call is the reader's to hear (the promise is settled). */
  follow(call: Call): AsyncGenerator<string[], void, undefined> {
    this.call = call;
    call.onFailure = this.failed;
    return this.batches(call);
  }

  body(bytes: Buffer): void {
    const call = this.call!;
    call.timer.refresh();
    if (this.parser.done || this.error) return;
    const chunk = this.decoder.write(bytes);
    this.size += chunk.length;
    try {
      if (this.size > MAX_ANSWER_BYTES) throw new HttpConnectionError(`The stream exceeded ${MAX_ANSWER_BYTES} bytes`);
      const got = this.parser.push(chunk);
      if (got.length) this.ready = this.ready.length ? this.ready.concat(got) : got;
    } catch (err) {
      this.error = err instanceof SseEventTooLongError ? new HttpConnectionError(err.message) : (err as Error);
    }
    if (this.ready.length && !this.parser.done) call.pause();
    if (this.ready.length || this.parser.done || this.error) this.rouse();
  }

  end(): void {
    const rest = this.decoder.end();
    if (rest && !this.parser.done && !this.error) {
      const got = this.parser.push(rest);
      if (got.length) this.ready = this.ready.concat(got);
    }
    this.ended = true;
    this.rouse();
  }

  private readonly failed = (err: Error): void => {
    this.error ??= err;
    this.rouse();
  };

  private rouse(): void {
    const resolve = this.wake;
    this.wake = undefined;
    resolve?.();
  }

  private async *batches(call: Call): AsyncGenerator<string[], void, undefined> {
    try {
      for (;;) {
        if (this.ready.length) {
          const batch = this.ready;
          this.ready = [];
          yield batch;
          call.resume();
          continue;
        }
        if (this.error) throw this.error;
        if (this.ended) break;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
      // An event the stream ended without its blank line: the SDK's reader delivers it too.
      const last = this.parser.end();
      if (last !== undefined) yield [last];
    } catch (err) {
      // After `[DONE]` the answer is whole: a failure reading what follows is not the caller's.
      if (this.parser.done) return;
      if (err instanceof HttpConnectionError) call.fail(err);
      throw call.failureOf(err as Error);
    } finally {
      call.settle();
      // A reader that stopped early, or a failure: the socket must not serve another call mid-answer.
      if (!call.complete) call.abandon();
    }
  }
}
