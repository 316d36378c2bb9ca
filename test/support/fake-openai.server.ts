import { createServer, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { text as readText } from 'node:stream/consumers';

/**
 * A real HTTP server speaking the OpenAI chat-completions API, so tests run the real `openai` SDK
 * (its request building, SSE parsing, retries, timeouts and error classes) against scripted replies.
 * Only the vendor is fake. Served at `POST /v1/chat/completions` and at Azure's
 * `POST /openai/deployments/{deployment}/chat/completions?api-version=...`.
 *
 * Replies are taken from a FIFO queue, one per request. A text or tool-call reply answers in the
 * shape the request asked for: a JSON completion, or (with `stream: true`) SSE chunks in OpenAI's
 * exact format, ending with a usage chunk when `stream_options.include_usage` is set, then `[DONE]`.
 * A request with nothing scripted gets a 500 whose message says so, which makes the test fail loudly.
 */

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

export interface FakeToolCall {
  id: string;
  name: string;
  arguments: string;
}

interface Timing {
  /** Wait before answering at all (before the status line, so the SDK's timeout counts it). */
  delayMs?: number;
  /** Hold the answer until this settles: the event-driven way to keep the "model" busy. */
  until?: Promise<unknown>;
  /**
   * Streaming text or hang: after the first chunks, each step waits for its `until` and then streams
   * its `chunks` (a slow model whose pace the test sets), before the reply goes on as it would.
   */
  steps?: { until: Promise<unknown>; chunks: string[] }[];
}

export type FakeReply =
  | ({ kind: 'text'; text: string; chunks?: string[]; usage?: FakeUsage; finishReason?: string } & Timing)
  | ({
      kind: 'tool_calls';
      calls: FakeToolCall[];
      text?: string;
      /** streamed as these content deltas before the calls */ chunks?: string[];
      usage?: FakeUsage;
    } & Timing)
  | ({ kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> } & Timing)
  /** Streams `chunks`, then destroys the socket mid-response (a non-streaming request gets no answer). */
  | ({ kind: 'stream_then_fail'; chunks: string[] } & Timing)
  /** Streams `chunks` (if streaming), then never answers further: for timeouts and disconnects. */
  | ({ kind: 'hang'; chunks?: string[] } & Timing)
  /** Streams `chunks`, then ends the response cleanly but with no finish_reason and no [DONE]. */
  | ({ kind: 'truncated'; chunks: string[] } & Timing)
  /** Streams `chunks`, then an `{error}` event (as a provider reports a failure mid-stream), then [DONE]. */
  | ({ kind: 'stream_error'; chunks: string[]; error: { message: string; code?: string } } & Timing);

/** Shorthands for scripting. */
export const reply = {
  text: (text: string, o: Omit<Extract<FakeReply, { kind: 'text' }>, 'kind' | 'text'> = {}): FakeReply => ({ kind: 'text', text, ...o }),
  chunks: (chunks: string[], o: Omit<Extract<FakeReply, { kind: 'text' }>, 'kind' | 'text' | 'chunks'> = {}): FakeReply => ({
    kind: 'text',
    text: chunks.join(''),
    chunks,
    ...o,
  }),
  toolCalls: (calls: FakeToolCall[], o: Omit<Extract<FakeReply, { kind: 'tool_calls' }>, 'kind' | 'calls'> = {}): FakeReply => ({
    kind: 'tool_calls',
    calls,
    ...o,
  }),
  error: (status: number, o: Omit<Extract<FakeReply, { kind: 'error' }>, 'kind' | 'status'> = {}): FakeReply => ({ kind: 'error', status, ...o }),
  streamThenFail: (chunks: string[], o: Timing = {}): FakeReply => ({ kind: 'stream_then_fail', chunks, ...o }),
  hang: (chunks?: string[], o: Timing = {}): FakeReply => ({ kind: 'hang', chunks, ...o }),
  truncated: (chunks: string[], o: Timing = {}): FakeReply => ({ kind: 'truncated', chunks, ...o }),
  streamError: (chunks: string[], error: { message: string; code?: string }): FakeReply => ({ kind: 'stream_error', chunks, error }),
};

export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  /** The Azure deployment named in the path, if any. */
  deployment?: string;
  /** True once the client closed the connection before the reply was complete. */
  clientDisconnected: boolean;
  /** Resolves when the client closes the connection before the reply was complete. */
  disconnected: Promise<void>;
}

export interface FakeOpenAi {
  /** `http://127.0.0.1:PORT` (the Azure endpoint form). */
  url: string;
  /** `url + '/v1'` (what TA_BASE_URL / the SDK's baseURL take). */
  baseURL: string;
  /** Appends replies to the queue. */
  script: (...replies: FakeReply[]) => void;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Resolves with the `index`-th request (0-based) once it has arrived. */
  waitForRequest: (index: number) => Promise<RecordedRequest>;
  /** Replies not yet used. */
  pending: () => number;
  /** Drops the replies not yet used; returns how many. */
  discard: () => number;
  close: () => Promise<void>;
}

const DEPLOYMENT_PATH = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/;

export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const waiters: { index: number; resolve: (r: RecordedRequest) => void }[] = [];
  let seq = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      // A bug in the fake must not look like a provider answer: drop the connection and say why.
      console.error('fake-openai failed', err);
      res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const raw = await readText(req);
    const n = ++seq;
    let resolveGone!: () => void;
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: safeJson(raw),
      deployment: DEPLOYMENT_PATH.exec(url.pathname)?.[1],
      clientDisconnected: false,
      disconnected: new Promise<void>((r) => (resolveGone = r)),
    };
    let selfDestroyed = false;
    res.on('close', () => {
      if (res.writableFinished || selfDestroyed) return;
      recorded.clientDisconnected = true;
      resolveGone();
    });
    requests.push(recorded);
    for (const w of waiters.filter((x) => x.index < requests.length)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(requests[w.index]);
    }
    res.setHeader('x-request-id', `req_fake_${n}`);

    const known = req.method === 'POST' && (url.pathname === '/v1/chat/completions' || DEPLOYMENT_PATH.test(url.pathname));
    if (!known) return sendJson(res, 404, errorBody(404, `fake-openai: no route ${req.method} ${url.pathname}`));
    const next = queue.shift();
    if (!next) return sendJson(res, 500, errorBody(500, `fake-openai: no reply scripted for request #${n}`));
    if (next.delayMs) await sleep(next.delayMs);
    if (next.until) await next.until.catch(() => undefined);
    if (res.destroyed) return;

    const body = recorded.body ?? {};
    const streaming = body.stream === true;
    const frame = new ChunkWriter(res, `chatcmpl-fake${n}`, String(body.model ?? 'fake-model'), body.stream_options?.include_usage === true);
    switch (next.kind) {
      case 'error':
        for (const [k, v] of Object.entries(next.headers ?? {})) res.setHeader(k, v);
        return sendJson(res, next.status, next.body ?? errorBody(next.status));
      case 'text':
        if (!streaming)
          return sendJson(res, 200, completion(frame.id, frame.model, { role: 'assistant', content: next.text }, next.finishReason ?? 'stop', next.usage));
        frame.open();
        frame.delta({ role: 'assistant', content: '' });
        for (const c of next.chunks ?? splitWords(next.text)) frame.delta({ content: c });
        if (!(await streamSteps(frame, res, next.steps))) return;
        return frame.finish(next.finishReason ?? 'stop', next.usage);
      case 'tool_calls': {
        const calls = next.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
        if (!streaming)
          return sendJson(
            res,
            200,
            completion(frame.id, frame.model, { role: 'assistant', content: next.text ?? null, tool_calls: calls }, 'tool_calls', next.usage),
          );
        frame.open();
        frame.delta({ role: 'assistant', content: next.chunks ? '' : (next.text ?? null) });
        for (const c of next.chunks ?? []) frame.delta({ content: c });
        // As OpenAI does: the id and name first, then the arguments in pieces.
        next.calls.forEach((c, index) => {
          frame.delta({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
          for (const piece of splitInto(c.arguments, 3)) frame.delta({ tool_calls: [{ index, function: { arguments: piece } }] });
        });
        return frame.finish('tool_calls', next.usage);
      }
      case 'stream_then_fail':
        if (streaming) {
          frame.open();
          for (const c of next.chunks) frame.delta({ content: c });
          // Let the chunks reach the client before the connection dies mid-body.
          await new Promise<void>((r) => res.write('', () => r()));
          await sleep(20);
        }
        selfDestroyed = true;
        res.destroy();
        return;
      case 'truncated':
        frame.open();
        for (const c of next.chunks) frame.delta({ content: c });
        res.end();
        return;
      case 'stream_error':
        frame.open();
        for (const c of next.chunks) frame.delta({ content: c });
        res.end(`data: ${JSON.stringify({ error: next.error })}\n\ndata: [DONE]\n\n`);
        return;
      case 'hang':
        if (streaming) {
          frame.open();
          for (const c of next.chunks ?? []) frame.delta({ content: c });
          await streamSteps(frame, res, next.steps);
        }
        return; // never finished; the client's disconnect (or close()) ends it
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    script: (...replies) => void queue.push(...replies),
    requests,
    waitForRequest: (index) => (requests[index] ? Promise.resolve(requests[index]) : new Promise((resolve) => waiters.push({ index, resolve }))),
    pending: () => queue.length,
    discard: () => queue.splice(0).length,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Streams each step's chunks once its `until` settled; false when the client went away meanwhile. */
async function streamSteps(frame: ChunkWriter, res: ServerResponse, steps: Timing['steps'] = []): Promise<boolean> {
  for (const step of steps) {
    await step.until.catch(() => undefined);
    if (res.destroyed) return false;
    for (const c of step.chunks) frame.delta({ content: c });
  }
  return true;
}

/** Writes OpenAI `chat.completion.chunk` events. */
class ChunkWriter {
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(
    private readonly res: ServerResponse,
    readonly id: string,
    readonly model: string,
    private readonly includeUsage: boolean,
  ) {}

  open(): void {
    this.res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  }

  delta(delta: Record<string, unknown>, finishReason: string | null = null): void {
    this.write([{ index: 0, delta, logprobs: null, finish_reason: finishReason }]);
  }

  finish(finishReason: string, usage: FakeUsage | undefined): void {
    this.delta({}, finishReason);
    // With include_usage, OpenAI sends one more chunk: no choices, the whole request's usage.
    if (this.includeUsage) this.write([], toUsage(usage));
    this.res.end('data: [DONE]\n\n');
  }

  private write(choices: unknown[], usage: unknown = null): void {
    const chunk: Record<string, unknown> = {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      system_fingerprint: 'fp_fake',
      choices,
    };
    if (this.includeUsage) chunk.usage = usage;
    this.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }
}

function completion(id: string, model: string, message: Record<string, unknown>, finishReason: string, usage?: FakeUsage) {
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { refusal: null, annotations: [], ...message }, logprobs: null, finish_reason: finishReason }],
    usage: toUsage(usage),
    system_fingerprint: 'fp_fake',
  };
}

function toUsage(u: FakeUsage | undefined) {
  const prompt = u?.prompt_tokens ?? 0;
  const completion = u?.completion_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: u?.total_tokens ?? prompt + completion };
}

const ERROR_TYPES: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided' },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model does not exist' },
  429: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests' },
  500: { type: 'server_error', code: null, message: 'The server had an error while processing your request' },
  503: { type: 'server_error', code: null, message: 'The engine is currently overloaded' },
};

export function errorBody(status: number, message?: string) {
  const t = ERROR_TYPES[status] ?? { type: 'server_error', code: null, message: `HTTP ${status}` };
  return { error: { message: message ?? t.message, type: t.type, param: null, code: t.code } };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function safeJson(raw: string): unknown {
  try {
    return raw ? JSON.parse(raw) : undefined;
  } catch {
    return raw;
  }
}

function splitWords(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function splitInto(s: string, parts: number): string[] {
  if (!s) return [];
  const size = Math.ceil(s.length / parts);
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The `fetch` to give a client SDK (AG-UI's HttpAgent) in tests. Jest runs test code in a VM context, but `fetch` and the
 * DOMException it throws when aborted come from Node's own realm. The SDK's `castToError` does not
 * recognise a foreign DOMException and drops its name, so an SDK timeout would look like a plain
 * connection error in tests only. Re-throwing aborts as this realm's Error keeps the SDK behaving as
 * it does in production (where the realms are one).
 */
export const realmSafeFetch: typeof fetch = async (input, init) => {
  try {
    return await fetch(input, init);
  } catch (err) {
    if (!(err instanceof Error) && (err as { name?: unknown })?.name === 'AbortError') {
      throw Object.assign(new Error((err as { message?: string }).message ?? 'aborted', { cause: err }), { name: 'AbortError' });
    }
    throw err;
  }
};
