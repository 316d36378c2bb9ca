import { IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { exchange, ExchangeOptions, HttpExchange, HttpCallAbortedError, HttpTimeoutError, openEventStream } from '../common/http-client/http-exchange';
import { retryDelayMs, shouldRetry } from './model-retry.policy';
import { ChatBody, chatBodyBytes } from './openai.params';
import { HeaderOf, llmErrorOfStatus } from './provider-status.mapper';

/** Where a model's completions are posted, with the headers that go with every call. */
export interface ChatEndpoint {
  url: URL;
  headers: Record<string, string>;
}

export interface CallLimits {
  /** Each attempt, to the answer's last byte. */
  timeoutMs: number;
  /** Attempts after the first. */
  maxRetries: number;
}

/**
 * A provider's HTTP error answer, kept as the cause of the domain error: its status, error code
 * and request id are what its support asks for (llm-failure-log.ts); its message may quote the
 * masked key, so it is never copied into ours.
 */
export class ProviderHttpError extends Error {
  override readonly name = 'ProviderHttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null | undefined,
    readonly requestID: string | undefined,
    readonly headers: IncomingHttpHeaders,
  ) {
    super(message);
  }
}

/** An `{error}` event in a provider's stream, kept as the cause (its message is never copied into ours). */
export class ProviderStreamError extends Error {
  override readonly name = 'ProviderStreamError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/**
 * Chat completions, posted directly on the kept-alive sockets of http-exchange.ts, streamed or not.
 * Why not through the openai SDK: per call the SDK builds WHATWG Headers, a Request and a Response
 * and reads the answer through a web stream (a streamed one through its own decoders too); that
 * was about a sixth of a plain v3 turn's CPU and nine-tenths of a streamed turn's own work
 * (`npm run bench`, issues 14 and 27), and loading it ~20 MiB. The request sent is the SDK's (the
 * same JSON, path, auth header); retries, their delays and the per-attempt timeout follow the
 * SDK's rules (model-retry.policy.ts), and every failure maps to one set of domain errors
 * (provider-status.mapper.ts). A stream is retried only before its answer began.
 */
export class ChatCompletionsClient {
  constructor(
    private readonly endpointOf: (model: string) => ChatEndpoint,
    private readonly limits: CallLimits,
    private readonly send: typeof exchange = exchange,
    private readonly open: typeof openEventStream = openEventStream,
  ) {}

  async create(body: ChatBody & { stream?: false | null }, signal?: AbortSignal): Promise<ChatCompletion> {
    return completionOf(await this.post(body, signal, this.send));
  }

  /**
   * The chunks of a streamed completion, in order, in batches as they arrived (see
   * StreamExchange.events). Failures during the stream are domain errors as before it.
   */
  async *stream(body: ChatBody & { stream: true }, signal?: AbortSignal): AsyncGenerator<ChatCompletionChunk[], void, undefined> {
    const { events } = await this.post(body, signal, this.open);
    try {
      for await (const batch of events!) {
        const chunks: ChatCompletionChunk[] = [];
        for (const data of batch) {
          let chunk: (ChatCompletionChunk & { error?: unknown }) | null;
          try {
            chunk = JSON.parse(data) as typeof chunk;
          } catch (err) {
            throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider sent an event that is not JSON', { cause: err });
          }
          if (chunk?.error) {
            // The chunks before the refusal are the caller's, as when they came one at a time.
            if (chunks.length) yield chunks;
            throw streamedRefusal(chunk.error);
          }
          if (chunk) chunks.push(chunk);
        }
        if (chunks.length) yield chunks;
      }
    } catch (err) {
      throw transportFailure(err, signal, this.limits.timeoutMs, false);
    }
  }

  /** Posts `body` until an attempt answers 2xx (returned) or the retries are spent (the domain error). */
  private async post<A extends HttpExchange>(
    body: ChatBody,
    signal: AbortSignal | undefined,
    send: (url: URL, options: ExchangeOptions) => Promise<A>,
  ): Promise<A> {
    const { url, headers } = this.endpointOf(body.model);
    // The bytes that are sent (and sent again by a retry): see ExchangeOptions.body.
    const payload = chatBodyBytes(body);
    for (let retry = 0; ; retry++) {
      const mayRetry = retry < this.limits.maxRetries;
      let answer: A;
      try {
        answer = await send(url, { method: 'POST', headers, body: payload, timeoutMs: this.limits.timeoutMs, signal });
      } catch (err) {
        if (mayRetry && !(err instanceof HttpCallAbortedError) && !signal?.aborted) {
          await pause(retryDelayMs(undefined, retry), signal);
          continue;
        }
        throw transportFailure(err, signal, this.limits.timeoutMs, true);
      }
      if (answer.status >= 200 && answer.status < 300) return answer;
      const header: HeaderOf = (name) => headerValue(answer.headers[name]);
      if (mayRetry && shouldRetry(answer.status, header)) {
        await pause(retryDelayMs(header, retry), signal);
        continue;
      }
      const refusal = refusalOf(answer);
      throw llmErrorOfStatus({ ...refusal, header }, refusal);
    }
  }
}

/** A failed exchange as a domain error; `before` when no answer had begun (after, a timeout is a stream gone silent). */
function transportFailure(err: unknown, signal: AbortSignal | undefined, timeoutMs: number, before: boolean): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof HttpCallAbortedError || signal?.aborted) return canceled(err);
  if (err instanceof HttpTimeoutError) {
    const what = before ? 'The model provider did not answer in time' : `The model provider stopped sending for ${timeoutMs} ms`;
    return new DomainError(ErrorCode.LLM_TIMEOUT, what, { cause: err });
  }
  if (before) return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider could not be reached', { cause: err });
  return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider failed during the stream', { cause: err });
}

/** An `{error}` event in a stream (the SDK throws it as an APIError without status): by its code when it is a filter, else unavailable. */
function streamedRefusal(error: unknown): DomainError {
  const inner = (typeof error === 'object' ? error : { message: String(error) }) as { message?: unknown; code?: unknown };
  const code = typeof inner.code === 'string' ? inner.code : undefined;
  const cause = new ProviderStreamError(typeof inner.message === 'string' ? inner.message : 'an error event', code);
  if (code === 'content_filter') return new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the answer', { cause });
  return new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider sent an error in the stream', { cause });
}

function completionOf(answer: HttpExchange): ChatCompletion {
  let completion: unknown;
  try {
    completion = JSON.parse(answer.body.toString());
  } catch (err) {
    throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider answered with something other than JSON', { cause: err });
  }
  if (!Array.isArray((completion as ChatCompletion | null)?.choices)) {
    throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider answered without choices');
  }
  return completion as ChatCompletion;
}

/** An error answer read as the SDK reads one: `{error: {message, code}}`, or its text. */
function refusalOf(answer: HttpExchange): ProviderHttpError {
  const text = answer.body.toString();
  let inner: { message?: unknown; code?: unknown } | undefined;
  try {
    inner = (JSON.parse(text) as { error?: typeof inner } | null)?.error ?? undefined;
  } catch {
    inner = undefined;
  }
  const said = typeof inner?.message === 'string' ? inner.message : inner ? JSON.stringify(inner) : text || 'status code (no body)';
  const code = typeof inner?.code === 'string' ? inner.code : undefined;
  return new ProviderHttpError(answer.status, `${answer.status} ${said}`, code, headerValue(answer.headers['x-request-id']), answer.headers);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function canceled(cause: unknown): DomainError {
  return new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled', { cause });
}

/** The wait before a retry; a cancel during it ends the call at once. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (err) {
    throw canceled(err);
  }
}
