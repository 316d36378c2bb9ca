import { AgentSpecConfig } from '../agents/config/agent.schema';
import type { LlmMessage } from '../llm/llm-client.port';
import { isContextLengthExceeded } from '../llm/context-length';
import { CHARS_PER_4, messageTokens, tokenCounterFor } from '../llm/token-counter';
import type { AgentRunner, RunOptions } from './agent-runner';
import { fitHistory, HistoryWindow, leaveOutOlderHalf } from './history-window';
import { AgentRunResult, partialRunOf } from './tool-loop';

/** What the model received of the history on a request's first model call (shown per request). */
export interface ModelInputInfo {
  /** Messages sent, system prompt and user context included. */
  messages: number;
  /** History messages left out (by `spec.agent.history`, or by the context-length retry). */
  omittedMessages: number;
  /** Some of the history was left out. */
  truncated: boolean;
  /** The left-out turns were replaced by a summary (`strategy: summarize`). */
  summarized: boolean;
}

/** The conversation fitted to the agent's `spec.agent.history` (everything when it has none). */
export function fitConversation(spec: AgentSpecConfig, conversation: readonly LlmMessage[], pinnedHead: number): HistoryWindow {
  // Tokens are counted only under a token limit: the tokenizer's ranks load, and the system prompt
  // is counted on every turn, only for an agent that limits its history by tokens.
  if (spec.history?.max_tokens === undefined) return fitHistory(conversation, { pinnedHead, limits: spec.history, counter: CHARS_PER_4 });
  const counter = tokenCounterFor(spec.model);
  const fixedTokens = spec.system_prompt?.trim() ? messageTokens({ role: 'system', content: spec.system_prompt }, counter) : 0;
  return fitHistory(conversation, { pinnedHead, limits: spec.history, counter, fixedTokens });
}

/** `summarized`: how many of the left-out messages a summary in the window stands for. */
export function modelInputOf(spec: AgentSpecConfig, window: HistoryWindow, summarized = 0): ModelInputInfo {
  const system = spec.system_prompt?.trim() ? 1 : 0;
  return {
    messages: system + window.messages.length,
    omittedMessages: window.omitted.length,
    truncated: window.omitted.length > summarized,
    summarized: summarized > 0,
  };
}

/**
 * Runs the agent on the fitted conversation. When the model answers "context length exceeded"
 * before any tool ran, it is asked once more with the older half of the earlier turns left out
 * too, so that a long task can always be continued; the result says so (`truncated`).
 */
export async function runFittingHistory(
  runner: Pick<AgentRunner, 'run'>,
  spec: AgentSpecConfig,
  window: HistoryWindow,
  options: RunOptions,
): Promise<{ result: AgentRunResult; window: HistoryWindow }> {
  try {
    return { result: await runner.run(spec, window.messages, options), window };
  } catch (err) {
    const smaller = isContextLengthExceeded(err) && !partialRunOf(err)?.toolExecutions.length ? leaveOutOlderHalf(window) : undefined;
    if (!smaller) throw err;
    return { result: await runner.run(spec, smaller.messages, options), window: smaller };
  }
}
