/**
 * The model behind a small port. The agent loop speaks only these types; `OpenAiLlmClient` maps them
 * to the `openai` SDK (OpenAI, Azure OpenAI, any OpenAI-compatible URL) and the built-in offline
 * models implement them with no network at all.
 */

export type LlmContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface LlmToolCall {
  /** The provider's id; a tool result refers to it. */
  id: string;
  name: string;
  /** JSON text exactly as the model produced it. */
  arguments: string;
}

export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | LlmContentPart[] }
  | { role: 'assistant'; content: string | null; tool_calls?: LlmToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface LlmToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/**
 * Structured output: the answer must be one JSON value of this schema (OpenAI's `response_format`
 * `json_schema`, always `strict`). `schema` is already in the strict subset (every property
 * required, `additionalProperties: false`).
 */
export interface LlmResponseFormat {
  /** `[a-zA-Z0-9_-]{1,64}`: the type's name. */
  name: string;
  description?: string;
  schema: Record<string, unknown>;
}

export interface LlmRequest {
  model: string;
  messages: LlmMessage[];
  temperature?: number;
  maxTokens?: number;
  reasoningEffort?: string;
  tools?: LlmToolSpec[];
  /**
   * Tool sources of the agent that could not be listed for this request (`MCP server X
   * unreachable`). Not sent to a provider; the offline models name them when asked for a tool.
   */
  toolsUnavailable?: string[];
  responseFormat?: LlmResponseFormat;
}

export interface TokenUsage {
  completion_tokens: number;
  prompt_tokens: number;
  total_tokens: number;
}

export interface LlmResult {
  content: string;
  toolCalls: LlmToolCall[];
  usage: TokenUsage;
  finishReason: string;
}

export type LlmStreamEvent = { type: 'delta'; text: string } | { type: 'done'; result: LlmResult };

export interface LlmClient {
  /** One model turn. Rejects with a DomainError (LLM_*) on provider failure; honours `signal`. */
  complete(request: LlmRequest, signal?: AbortSignal): Promise<LlmResult>;
  /**
   * The same turn streamed: text deltas, then exactly one `done`. An aborted signal ends the
   * iteration with a REQUEST_CANCELED DomainError, never silently.
   */
  stream(request: LlmRequest, signal?: AbortSignal): AsyncIterable<LlmStreamEvent>;
}

export function emptyUsage(): TokenUsage {
  return { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    completion_tokens: a.completion_tokens + b.completion_tokens,
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}
