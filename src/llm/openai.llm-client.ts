import OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { mapLlmError } from './llm-error.mapper';
import { emptyUsage, LlmClient, LlmRequest, LlmResult, LlmStreamEvent, LlmToolCall, TokenUsage } from './llm-client.port';

/**
 * LlmClient on the official `openai` SDK. Works for OpenAI, Azure OpenAI (an `AzureOpenAI` instance)
 * and any OpenAI-compatible base URL. Timeouts and retries are the SDK's own (configured, not
 * re-implemented); a stream that has begun is never retried.
 */
export class OpenAiLlmClient implements LlmClient {
  constructor(private readonly sdk: OpenAI) {}

  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
    try {
      const res = await this.sdk.chat.completions.create({ ...toParams(request), stream: false }, { signal });
      const choice = res.choices[0];
      const toolCalls: LlmToolCall[] = (choice?.message?.tool_calls ?? [])
        .filter((c) => c.type === 'function')
        .map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
      return {
        content: choice?.message?.content ?? '',
        toolCalls,
        usage: toUsage(res.usage),
        finishReason: choice?.finish_reason ?? 'stop',
      };
    } catch (err) {
      throw mapLlmError(err, signal);
    }
  }

  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    let content = '';
    let usage: TokenUsage = emptyUsage();
    let finishReason = 'stop';
    const calls = new Map<number, LlmToolCall>();
    try {
      const stream = await this.sdk.chat.completions.create(
        { ...toParams(request), stream: true, stream_options: { include_usage: true } },
        { signal },
      );
      for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) {
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
      throw mapLlmError(err, signal);
    }
    // The SDK ends an aborted stream quietly (no exception): say so explicitly.
    if (signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
    const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
    yield { type: 'done', result: { content, toolCalls, usage, finishReason } };
  }
}

const REASONING_MODEL = /^(o\d|gpt-5)/i;

function toParams(request: LlmRequest): ChatCompletionCreateParamsBase {
  const params: ChatCompletionCreateParamsBase = {
    model: request.model,
    messages: request.messages as ChatCompletionMessageParam[],
  };
  // `temperature: 0` is a value, not "unset".
  if (request.temperature !== undefined) params.temperature = request.temperature;
  if (request.maxTokens !== undefined) {
    // Reasoning models refuse `max_tokens`; many OpenAI-compatible servers know only `max_tokens`.
    if (REASONING_MODEL.test(request.model)) params.max_completion_tokens = request.maxTokens;
    else params.max_tokens = request.maxTokens;
  }
  if (request.reasoningEffort !== undefined) {
    (params as { reasoning_effort?: string }).reasoning_effort = request.reasoningEffort;
  }
  if (request.tools?.length) {
    params.tools = request.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  return params;
}

function toUsage(u: { completion_tokens?: number; prompt_tokens?: number; total_tokens?: number } | null | undefined): TokenUsage {
  const completion = u?.completion_tokens ?? 0;
  const prompt = u?.prompt_tokens ?? 0;
  return { completion_tokens: completion, prompt_tokens: prompt, total_tokens: u?.total_tokens ?? completion + prompt };
}
