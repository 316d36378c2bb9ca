import { AgentSpecConfig } from '../agents/config/agent.schema';
import { LlmMessage, LlmRequest, LlmResult } from '../llm/llm-client.port';
import { LlmProvider } from '../llm/llm-provider';

export interface RunOptions {
  signal?: AbortSignal;
  /** When given, the model is streamed and each text delta is passed here. */
  onDelta?: (text: string) => void;
}

/**
 * Runs one agent over a list of messages: the system prompt first, then the conversation. Knows
 * nothing of HTTP or of how history is stored.
 */
export class AgentRunner {
  constructor(private readonly llm: LlmProvider) {}

  async run(agent: AgentSpecConfig, conversation: LlmMessage[], options: RunOptions = {}): Promise<LlmResult> {
    const request = buildRequest(agent, conversation);
    const client = this.llm.clientFor(agent.model);
    if (!options.onDelta) return client.complete(request, options.signal);
    let result: LlmResult | undefined;
    for await (const ev of client.stream(request, options.signal)) {
      if (ev.type === 'delta') options.onDelta(ev.text);
      else result = ev.result;
    }
    if (!result) throw new Error('model stream ended without a result');
    return result;
  }
}

export function buildRequest(agent: AgentSpecConfig, conversation: LlmMessage[]): LlmRequest {
  const messages: LlmMessage[] = [];
  if (agent.system_prompt?.trim()) messages.push({ role: 'system', content: agent.system_prompt });
  messages.push(...conversation);
  return {
    model: agent.model,
    messages,
    temperature: agent.temperature,
    maxTokens: agent.max_tokens,
    reasoningEffort: agent.reasoning_effort,
  };
}
