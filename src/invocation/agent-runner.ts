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

  run(agent: AgentSpecConfig, conversation: LlmMessage[], options: RunOptions = {}): Promise<AgentRunResult> {
    const toolset = this.tools?.toolsetFor(agent) ?? Toolset.EMPTY;
    const deps = { client: this.llm.clientFor(agent.model), toolset, executor: this.executor };
    return runToolLoop(deps, buildRequest(agent, conversation, options.responseFormat), agent.max_tool_rounds ?? 10, options);
  }
}

export function buildRequest(agent: AgentSpecConfig, conversation: LlmMessage[], responseFormat?: LlmResponseFormat): LlmRequest {
  const messages: LlmMessage[] = [];
  if (agent.system_prompt?.trim()) messages.push({ role: 'system', content: agent.system_prompt });
  messages.push(...conversation);
  return {
    model: agent.model,
    messages,
    temperature: agent.temperature,
    maxTokens: agent.max_tokens,
    reasoningEffort: agent.reasoning_effort,
    ...(responseFormat ? { responseFormat } : {}),
  };
}
