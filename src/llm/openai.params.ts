import type { ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { LlmMessage, LlmRequest, LlmResult, TokenUsage } from './llm-client.port';

const REASONING_MODEL = /^(o\d|gpt-5)/i;

/** Our request → the SDK's chat-completions parameters (everything but `stream`). */
export function toChatParams(request: LlmRequest): ChatCompletionCreateParamsBase {
  const params: ChatCompletionCreateParamsBase = {
    model: request.model,
    // Usually nothing needs converting: then the (long) list is passed as it is, not copied.
    messages: request.messages.some(needsConversion) ? request.messages.map(toChatMessage) : (request.messages as ChatCompletionMessageParam[]),
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
  if (request.responseFormat) {
    const { name, description, schema } = request.responseFormat;
    params.response_format = { type: 'json_schema', json_schema: { name, ...(description ? { description } : {}), schema, strict: true } };
  }
  if (request.tools?.length) {
    params.tools = request.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  return params;
}

export function toUsage(u: { completion_tokens?: number; prompt_tokens?: number; total_tokens?: number } | null | undefined): TokenUsage {
  const completion = u?.completion_tokens ?? 0;
  const prompt = u?.prompt_tokens ?? 0;
  // Field order matters on the wire: upstream's TokenUsage serialises completion, prompt, total.
  return { completion_tokens: completion, prompt_tokens: prompt, total_tokens: u?.total_tokens ?? completion + prompt };
}

function needsConversion(m: LlmMessage): boolean {
  return m.role === 'assistant' && !!m.tool_calls?.length;
}

/** The conversion of each message that cannot change (frozen), made once: see `jsonOf`. */
const converted = new WeakMap<LlmMessage, ChatCompletionMessageParam>();

/** Our messages are OpenAI's, except an assistant turn's tool calls, which OpenAI nests under `function`. */
function toChatMessage(m: LlmMessage): ChatCompletionMessageParam {
  if (m.role !== 'assistant' || !m.tool_calls?.length) return m as ChatCompletionMessageParam;
  const done = converted.get(m);
  if (done) return done;
  const out: ChatCompletionMessageParam = {
    role: 'assistant',
    content: m.content,
    tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
  };
  if (Object.isFrozen(m)) converted.set(m, Object.freeze(out));
  return out;
}

/**
 * The JSON of each message that cannot change (frozen: the replayed history, task-history.ts),
 * made once per message object. A follow-on sends the whole history again; only its new messages
 * are serialized, so that part of a turn no longer grows with the task (issue 27).
 */
const messageJson = new WeakMap<object, string>();

function jsonOf(m: object): string {
  let json = messageJson.get(m);
  if (json === undefined) {
    json = JSON.stringify(m);
    if (Object.isFrozen(m)) messageJson.set(m, json);
  }
  return json;
}

/** `JSON.stringify(body)`, byte for byte (model and messages are its first keys), with each message's JSON reused (`jsonOf`). */
export function chatBodyJson(body: ChatCompletionCreateParamsBase): string {
  const { model, messages, ...rest } = body;
  let out = `{"model":${JSON.stringify(model)},"messages":[`;
  for (let i = 0; i < messages.length; i++) out += i === 0 ? jsonOf(messages[i]!) : `,${jsonOf(messages[i]!)}`;
  const tail = JSON.stringify(rest);
  return tail === '{}' ? `${out}]}` : `${out}],${tail.slice(1)}`;
}

/** Azure (and OpenAI moderation) cut a filtered answer short: that is an error, not an answer. */
export function checkFinish(result: LlmResult): LlmResult {
  if (result.finishReason === 'content_filter') {
    throw new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the answer');
  }
  return result;
}
