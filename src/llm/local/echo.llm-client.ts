import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { LlmClient, LlmMessage, LlmRequest, LlmResult, LlmStreamEvent, LlmToolCall } from '../llm-client.port';
import { structuredEcho } from './structured-echo';
import { toolCommandReply } from './tool-commands';

export const ECHO_MODEL = 'local/echo';

/**
 * `local/echo`: the built-in offline model. No network, deterministic: it answers with the text of
 * the last user message (images shown as `[image]`), and counts whitespace-separated words as
 * tokens. Streaming yields the answer word by word. With a `responseFormat` it answers JSON of
 * that schema (structured-echo.ts).
 */
export class EchoLlmClient implements LlmClient {
  async complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmResult> {
    if (signal?.aborted) throw canceled();
    return reply(request);
  }

  async *stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent> {
    const result = reply(request);
    for (const piece of result.content.match(/\S+\s*/g) ?? []) {
      if (signal?.aborted) throw canceled();
      yield { type: 'delta', text: piece };
    }
    if (signal?.aborted) throw canceled();
    yield { type: 'done', result };
  }
}

function canceled(): DomainError {
  return new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
}

function reply(request: LlmRequest): LlmResult {
  const tools = toolCommandReply(request);
  if (tools?.kind === 'calls') return toolCallTurn(request, tools.calls);
  const lastUser = [...request.messages].reverse().find((m) => m.role === 'user');
  const text = tools ? tools.text : lastUser ? textOf(lastUser) : '';
  // Asked for structured output, it echoes in the requested shape (structured-echo.ts).
  const content = request.responseFormat ? structuredEcho(request.responseFormat.schema, text) : text;
  const prompt = request.messages.reduce((n, m) => n + countWords(textOf(m)), 0);
  const completion = countWords(content);
  return {
    content,
    toolCalls: [],
    // Upstream's field order (completion, prompt, total): SSE frames are compared byte for byte.
    usage: { completion_tokens: completion, prompt_tokens: prompt, total_tokens: prompt + completion },
    finishReason: 'stop',
  };
}

/** A turn that asks for tools (docs/tools.md, "The offline model and tools"): no text, only calls. */
function toolCallTurn(request: LlmRequest, toolCalls: LlmToolCall[]): LlmResult {
  const prompt = request.messages.reduce((n, m) => n + countWords(textOf(m)), 0);
  const completion = toolCalls.reduce((n, c) => n + countWords(`${c.name} ${c.arguments}`), 0);
  return {
    content: '',
    toolCalls,
    usage: { completion_tokens: completion, prompt_tokens: prompt, total_tokens: prompt + completion },
    finishReason: 'tool_calls',
  };
}

function textOf(m: LlmMessage): string {
  const c = m.content;
  if (c === null) return '';
  if (typeof c === 'string') return c;
  return c.map((p) => (p.type === 'text' ? p.text : '[image]')).join(' ');
}

function countWords(s: string): number {
  return s.split(/\s+/).filter(Boolean).length;
}
