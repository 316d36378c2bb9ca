import { IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { exchange, HttpExchange, ModelCallAbortedError, ModelTimeoutError } from './http-exchange';
import { retryDelayMs, shouldRetry } from './model-retry.policy';
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

/**
 * Non-streaming chat completions, posted directly on the kept-alive sockets of http-exchange.ts.
 * Why not through the openai SDK (which still makes the streamed calls): per call the SDK builds
 * WHATWG Headers, a Request and a Response and reads the answer through a web stream; that was
 * about a sixth of a plain v3 turn's CPU (`npm run bench`, issue 14), and loading it ~20 MiB.
 * The request sent is the SDK's (the same JSON, path, auth header); retries, their delays and the
 * per-attempt timeout follow the SDK's rules (model-retry.policy.ts), and every failure maps to
 * the same domain errors (provider-status.mapper.ts).
 */
export class ChatCompletionsClient {
  constructor(
    private readonly endpointOf: (model: string) => ChatEndpoint,
    private readonly limits: CallLimits,
    private readonly send: typeof exchange = exchange,
  ) {}

  async create(body: ChatCompletionCreateParamsNonStreaming, signal?: AbortSignal): Promise<ChatCompletion> {
    const { url, headers } = this.endpointOf(body.model);
    const payload = JSON.stringify(body);
    for (let retry = 0; ; retry++) {
      const mayRetry = retry < this.limits.maxRetries;
      let answer: HttpExchange;
      try {
        answer = await this.send(url, { method: 'POST', headers, body: payload, timeoutMs: this.limits.timeoutMs, signal });
      } catch (err) {
        if (err instanceof ModelCallAbortedError || signal?.aborted) throw canceled(err);
        if (mayRetry) {
          await pause(retryDelayMs(undefined, retry), signal);
          continue;
        }
        if (err instanceof ModelTimeoutError) throw new DomainError(ErrorCode.LLM_TIMEOUT, 'The model provider did not answer in time', { cause: err });
        throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider could not be reached', { cause: err });
      }
      const header: HeaderOf = (name) => headerValue(answer.headers[name]);
      if (answer.status >= 200 && answer.status < 300) return completionOf(answer);
      if (mayRetry && shouldRetry(answer.status, header)) {
        await pause(retryDelayMs(header, retry), signal);
        continue;
      }
      const refusal = refusalOf(answer);
      throw llmErrorOfStatus({ ...refusal, header }, refusal);
    }
  }
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
