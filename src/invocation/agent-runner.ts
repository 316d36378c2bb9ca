import { AgentSpecConfig } from '../agents/config/agent.schema';
import { LlmMessage, LlmRequest, LlmResponseFormat } from '../llm/llm-client.port';
import { LlmProvider } from '../llm/llm-provider';
import { ToolExecutor } from '../tools/tool-executor';
import type { ToolRegistry } from '../tools/tool-registry';
import { DEFAULT_TOOLS_CONFIG } from '../tools/tools.config';
import { Toolset } from '../tools/toolset';
import { AgentRunResult, runToolLoop, ToolLoopOptions } from './tool-loop';

/**
 * `signal` aborts the model call and the running tools; `onDelta` streams each model turn's text;
 * `caller` is who the tools act for (required when the agent has tools); `onToolCall` and
 * `onToolResult` report each tool call as it starts and ends.
 */
export type RunOptions = ToolLoopOptions & {
  /** Structured output: every model turn is asked for this JSON shape (src/invocation/structured-output.ts). */
  responseFormat?: LlmResponseFormat;
};

/**
 * Runs one agent over a list of messages: the system prompt first, then the conversation, then the
 * tool loop (model turns with the agent's tools until it answers; src/invocation/tool-loop.ts).
 * Knows nothing of HTTP or of how history is stored.
 */
export class AgentRunner {
  constructor(
    private readonly llm: LlmProvider,
    private readonly tools?: ToolRegistry,
    private readonly executor: ToolExecutor = new ToolExecutor(DEFAULT_TOOLS_CONFIG),
  ) {}

  run(agent: AgentSpecConfig, conversation: readonly LlmMessage[], options: RunOptions = {}): Promise<AgentRunResult> {
    const toolset = this.tools?.toolsetFor(agent) ?? Toolset.EMPTY;
    const deps = { client: this.llm.clientFor(agent.model), toolset, executor: this.executor };
    return runToolLoop(deps, buildRequest(agent, conversation, options.responseFormat), agent.max_tool_rounds ?? 10, options);
  }
}

export function buildRequest(agent: AgentSpecConfig, conversation: readonly LlmMessage[], responseFormat?: LlmResponseFormat): LlmRequest {
  // One copy, made at its final size (this holds the whole history on every follow-on).
  const system = agent.system_prompt?.trim() ? 1 : 0;
  const messages = new Array<LlmMessage>(system + conversation.length);
  if (system) messages[0] = { role: 'system', content: agent.system_prompt! };
  for (let i = 0; i < conversation.length; i++) messages[system + i] = conversation[i]!;
  return {
    model: agent.model,
    messages,
    temperature: agent.temperature,
    maxTokens: agent.max_tokens,
    reasoningEffort: agent.reasoning_effort,
    ...(responseFormat ? { responseFormat } : {}),
  };
}
