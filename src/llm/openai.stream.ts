import type OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { emptyUsage, LlmRequest, LlmStreamEvent, LlmToolCall, TokenUsage } from './llm-client.port';
import { mapLlmError } from './llm-error.mapper';
import { checkFinish, toChatParams, toUsage } from './openai.params';

/**
 * One streamed model turn through the official `openai` SDK: text deltas, then exactly one `done`.
 * Timeouts and retries are the SDK's own (configured, not re-implemented); a stream that has
 * begun is never retried.
 */
export async function* streamChat(sdk: OpenAI, request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
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
    const stream = await sdk.chat.completions.create({ ...toChatParams(request), stream: true, stream_options: { include_usage: true } }, { signal: combined });
    idle = setTimeout(() => stalled.abort(), sdk.timeout);
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
    if (stalled.signal.aborted && !signal?.aborted) throw stalledError(sdk.timeout, err);
    throw mapLlmError(err, signal);
  } finally {
    clearTimeout(idle);
  }
  // The SDK ends an aborted stream quietly (no exception): say so explicitly.
  if (signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
  if (!finishReason) {
    if (stalled.signal.aborted) throw stalledError(sdk.timeout);
    // A connection closed cleanly but early looks like a short answer; it is not one.
    throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider ended the stream before the answer was complete');
  }
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
  yield { type: 'done', result: checkFinish({ content, toolCalls, usage, finishReason }) };
}

function stalledError(timeoutMs: number, cause?: unknown): DomainError {
  return new DomainError(ErrorCode.LLM_TIMEOUT, `The model provider stopped sending for ${timeoutMs} ms`, { cause });
}
