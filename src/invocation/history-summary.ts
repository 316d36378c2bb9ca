import { createHash } from 'node:crypto';
import type { AgentSpecConfig } from '../agents/config/agent.schema';
import type { LlmMessage, TokenUsage } from '../llm/llm-client.port';
import type { AgentRunner } from './agent-runner';
import type { HistoryWindow } from './history-window';

/** The system prompt of the summarizing model call. */
export const SUMMARY_INSTRUCTIONS =
  'You summarize the earlier part of a conversation between a user and an assistant, for the assistant that continues it. ' +
  'Keep every fact, decision, name, number, preference, open question and tool result that may matter later; drop small talk. ' +
  'Answer with the summary only, in the language of the conversation.';

/** How the summary is shown to the model, in place of the turns it stands for. */
export const SUMMARY_HEADING = 'Summary of the earlier conversation (older turns left out):\n';

export function digestOf(messages: readonly LlmMessage[]): string {
  return createHash('sha256').update(JSON.stringify(messages)).digest('hex');
}

/** The left-out messages as plain text for the summarizing call (tool calls and results included). */
export function transcriptOf(messages: readonly LlmMessage[]): string {
  const lines: string[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'user':
        lines.push(`user: ${typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join(' ')}`);
        break;
      case 'assistant':
        if (m.content) lines.push(`assistant: ${m.content}`);
        for (const c of m.tool_calls ?? []) lines.push(`assistant called the tool ${c.name} with ${c.arguments}`);
        break;
      case 'tool':
        lines.push(`tool result: ${m.content}`);
        break;
      case 'system':
        lines.push(`system: ${m.content}`);
    }
  }
  return lines.join('\n');
}

/**
 * Asks the agent's model (without its tools) for a summary of `messages`, continuing `previous`
 * (the summary of the messages before them) when there is one.
 */
export async function summarize(
  runner: Pick<AgentRunner, 'run'>,
  spec: AgentSpecConfig,
  messages: readonly LlmMessage[],
  previous: string | undefined,
  signal?: AbortSignal,
): Promise<{ text: string; usage: TokenUsage }> {
  const body = previous
    ? `The summary so far:\n${previous}\n\nThe conversation that followed:\n${transcriptOf(messages)}\n\nWrite one summary of both.`
    : `The conversation:\n${transcriptOf(messages)}`;
  // A copy of the spec has no toolset (tools are registered per spec object), and no history limits.
  const summarizer: AgentSpecConfig = { ...spec, system_prompt: SUMMARY_INSTRUCTIONS, history: undefined, plugins: [], remote_plugins: [], mcp_servers: [] };
  const result = await runner.run(summarizer, [{ role: 'user', content: body }], { signal });
  return { text: result.content.trim(), usage: result.usage };
}

/** The window with the summary standing in for its left-out turns, kept like the user context. */
export function withSummary(window: HistoryWindow, text: string): HistoryWindow {
  const summary: LlmMessage = { role: 'user', content: SUMMARY_HEADING + text };
  const pinned = window.messages.slice(0, window.pinned);
  return { ...window, messages: [...pinned, summary, ...window.messages.slice(window.pinned)], pinned: window.pinned + 1 };
}
