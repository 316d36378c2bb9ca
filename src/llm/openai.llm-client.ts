import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { ChatCompletionsClient } from './chat-completions.client';
import { LlmClient, LlmRequest, LlmResult, LlmStreamEvent, LlmToolCall } from './llm-client.port';
import { checkFinish, toChatParams, toUsage } from './openai.params';

/**
 * LlmClient for OpenAI, Azure OpenAI and any OpenAI-compatible base URL. A completion is posted by
 * our ChatCompletionsClient (chat-completions.client.ts says why); a stream goes through the
 * official `openai` SDK (openai.stream.ts), which is loaded on the first stream only.
 */
export class OpenAiLlmClient implements LlmClient {
  private sdk?: OpenAI;

  constructor(
    private readonly completions: ChatCompletionsClient,
    private readonly createSdk: () => OpenAI,
  ) {}

  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
    const body: ChatCompletionCreateParamsNonStreaming = { ...toChatParams(request), stream: false };
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

  stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    const { streamChat } = require('./openai.stream') as typeof import('./openai.stream');
    return streamChat((this.sdk ??= this.createSdk()), request, signal);
  }
}
