import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { ChatCompletionsClient } from './chat-completions.client';
import { emptyUsage, LlmClient, LlmRequest, LlmResult, LlmStreamEvent, LlmToolCall, TokenUsage } from './llm-client.port';
import { ChatBody, checkFinish, toChatParams, toUsage } from './openai.params';

/**
 * LlmClient for OpenAI, Azure OpenAI and any OpenAI-compatible base URL, over our own
 * ChatCompletionsClient (chat-completions.client.ts says why not the SDK).
 */
export class OpenAiLlmClient implements LlmClient {
  constructor(private readonly completions: ChatCompletionsClient) {}

  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
    const body: ChatBody & { stream: false } = { ...toChatParams(request), stream: false };
    const res = await this.completions.create(body, signal);
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
  }

  /**
   * Text deltas, then exactly one `done`. Retries happen only before the stream begins (the
   * client's); the per-attempt timeout then bounds each silence of the stream.
   */
  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    let content = '';
    let usage: TokenUsage = emptyUsage();
    let finishReason: string | undefined;
    const calls = new Map<number, LlmToolCall>();
    const chunks = this.completions.stream({ ...toChatParams(request), stream: true, stream_options: { include_usage: true } }, signal);
    for await (const batch of chunks) {
      for (const chunk of batch) {
        if (chunk.usage) usage = toUsage(chunk.usage);
        const choice = chunk.choices?.[0];
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
    }
    if (signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
    // A connection closed cleanly but early looks like a short answer; it is not one.
    if (!finishReason) throw new DomainError(ErrorCode.LLM_UNAVAILABLE, 'The model provider ended the stream before the answer was complete');
    const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
    yield { type: 'done', result: checkFinish({ content, toolCalls, usage, finishReason }) };
  }
}
