import type { LlmMessage } from '../llm/llm-client.port';
import { messageTokens, TokenCounter } from '../llm/token-counter';

export interface HistoryLimits {
  max_messages?: number;
  max_tokens?: number;
}

export interface FitOptions {
  /** Leading messages that always stay and are not counted by max_messages (the user context). */
  pinnedHead: number;
  limits?: HistoryLimits;
  counter: TokenCounter;
  /** Tokens of input outside `conversation` that count towards max_tokens (the system prompt). */
  fixedTokens?: number;
}

/** What the model receives of a conversation, and what was left out of it. */
export interface HistoryWindow {
  /** The pinned messages, then the kept turns (always at least the current one). Never changed once made: it may be the conversation itself. */
  messages: readonly LlmMessage[];
  /** How many of `messages` are pinned. */
  pinned: number;
  /** The left-out messages, oldest first (whole turns). */
  omitted: LlmMessage[];
  omittedTurns: number;
}

/**
 * The turns of a conversation: each starts at a user message and holds everything answered to it
 * (assistant turns, tool calls and their results), so a tool call and its result are always in
 * the same turn. Messages before the first user message form a turn of their own.
 */
export function turnsOf(messages: readonly LlmMessage[]): LlmMessage[][] {
  const turns: LlmMessage[][] = [];
  for (const m of messages) {
    if (m.role === 'user' || turns.length === 0) turns.push([m]);
    else turns[turns.length - 1]!.push(m);
  }
  return turns;
}

/**
 * Fits a conversation to `spec.agent.history`: the newest whole turns that fit both limits are
 * kept, the older ones left out. The pinned head (user context) and the current (last) turn always
 * stay, even when they alone exceed a limit: the model then answers, or says the input is too long.
 */
export function fitHistory(conversation: readonly LlmMessage[], options: FitOptions): HistoryWindow {
  const { max_messages, max_tokens } = options.limits ?? {};
  // Without limits everything is kept, so there are no turns to find: this runs on every follow-on,
  // and splitting a long task into turns only to join them again grew with the history. Nor is the
  // conversation copied (a window is read, never changed).
  if (max_messages === undefined && max_tokens === undefined) {
    return { messages: conversation, pinned: Math.min(options.pinnedHead, conversation.length), omitted: [], omittedTurns: 0 };
  }
  const pinned = conversation.slice(0, options.pinnedHead);
  const turns = turnsOf(conversation.slice(options.pinnedHead));
  const tokensOf = (ms: readonly LlmMessage[]) => ms.reduce((n, m) => n + messageTokens(m, options.counter), 0);
  let messages = 0;
  let tokens = (options.fixedTokens ?? 0) + (max_tokens !== undefined ? tokensOf(pinned) : 0);
  let keep = 0;
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]!;
    messages += turn.length;
    if (max_tokens !== undefined) tokens += tokensOf(turn);
    const current = i === turns.length - 1;
    if (!current && ((max_messages !== undefined && messages > max_messages) || (max_tokens !== undefined && tokens > max_tokens))) break;
    keep++;
  }
  return windowOf(pinned, turns, turns.length - keep);
}

/**
 * The retry after "context length exceeded": the older half of the earlier turns left out too
 * (rounded up, so one earlier turn goes). Undefined when only the current turn is left.
 */
export function leaveOutOlderHalf(window: HistoryWindow): HistoryWindow | undefined {
  const pinned = window.messages.slice(0, window.pinned);
  const kept = turnsOf(window.messages.slice(window.pinned));
  const earlier = kept.length - 1;
  if (earlier <= 0) return undefined;
  const more = windowOf(pinned, kept, Math.ceil(earlier / 2));
  return { ...more, omitted: [...window.omitted, ...more.omitted], omittedTurns: window.omittedTurns + more.omittedTurns };
}

function windowOf(pinned: LlmMessage[], turns: LlmMessage[][], leaveOut: number): HistoryWindow {
  return {
    messages: [...pinned, ...turns.slice(leaveOut).flat()],
    pinned: pinned.length,
    omitted: turns.slice(0, leaveOut).flat(),
    omittedTurns: leaveOut,
  };
}
