import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { emptyUsage, LlmClient, LlmRequest, LlmResult, LlmStreamEvent, LlmToolCall, TokenUsage } from './llm-client.port';
import { mapLlmError } from './llm-error.mapper';
import { toChatParams, toUsage } from './openai.params';

/**
 * LlmClient on the official `openai` SDK. Works for OpenAI, Azure OpenAI (an `AzureOpenAI` instance)
 * and any OpenAI-compatible base URL. Timeouts and retries are the SDK's own (configured, not
 * re-implemented); a stream that has begun is never retried.
 */
export class OpenAiLlmClient implements LlmClient {
  constructor(private readonly sdk: OpenAI) {}

  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
    try {
      // `post` rather than `chat.completions.create`: for `create` the SDK serialises the body
      // through a replacer called on every value (to find `stream`), several times the cost of a
      // plain JSON.stringify on a long conversation; the request sent is the same.
      const body: ChatCompletionCreateParamsNonStreaming = { ...toChatParams(request), stream: false };
      const res = await this.sdk.post<ChatCompletion>('/chat/completions', { body, signal });
      const choice = res.choices[0];
      const toolCalls: LlmToolCall[] = (choice?.message?.tool_calls ?? [])
        .filter((c) => c.type === 'function')
        .map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
      return checkFinish({
        content: choice?.message?.content ?? '',
        toolCalls,
        usage: toUsage(res.usage),
        finishReason: choice?.finish_reason ?? 'stop',
      });
    } catch (err) {
      throw mapLlmError(err, signal);
    }
  }

  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    let content = '';
    let usage: TokenUsage = emptyUsage();
    let finishReason: string | undefined;
    const calls = new Map<number, LlmToolCall>();
    // The SDK's timeout ends when the response headers arrive; a provider that then stalls would
    // hold the stream (and the client) forever. The same limit, restarted on every chunk, ends it.
    const stalled = new AbortController();
    const combined = signal ? AbortSignal.any([signal, stalled.signal]) : stalled.signal;
    let idle: NodeJS.Timeout | undefined;
    try {
      const stream = await this.sdk.chat.completions.create(
        { ...toChatParams(request), stream: true, stream_options: { include_usage: true } },
        { signal: combined },
      );
      idle = setTimeout(() => stalled.abort(), this.sdk.timeout);
      idle.unref();
      for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) {
        idle.refresh();
        if (chunk.usage) usage = toUsage(chunk.usage);
        const choice = chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) finishReason = choice.finish_reason;
        const delta = choice.delta;
        if (delta?.content) {
          content += delta.content;
          yield { type: 'delta', text: delta.content };
        }
        for (const tc of delta?.tool_calls ?? []) {
          const cur = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
          if (tc.id) cur.id = tc.id;
          if (tc.function?.name) cur.name += tc.function.name;
          if (tc.function?.arguments) cur.arguments += tc.function.arguments;
          calls.set(tc.index, cur);
        }
      }
    } catch (err) {
      if (stalled.signal.aborted && !signal?.aborted) throw stalledError(this.sdk.timeout, err);
      throw mapLlmError(err, signal);
    } finally {
      clearTimeout(idle);
    }
    // The SDK ends an aborted stream quietly (no exception): say so explicitly.
    if (signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
    if (!finishReason) {
      if (stalled.signal.aborted) throw stalledError(this.sdk.timeout);
      // A connection closed cleanly but early looks like a short answer; it is not one.
      throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider ended the stream before the answer was complete');
    }
    const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
    yield { type: 'done', result: checkFinish({ content, toolCalls, usage, finishReason }) };
  }
}

function stalledError(timeoutMs: number, cause?: unknown): DomainError {
  return new DomainError(ErrorCode.LLM_TIMEOUT, `The model provider stopped sending for ${timeoutMs} ms`, { cause });
}

/** Azure (and OpenAI moderation) cut a filtered answer short: that is an error, not an answer. */
function checkFinish(result: LlmResult): LlmResult {
  if (result.finishReason === 'content_filter') {
    throw new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the answer');
  }
  return result;
}
