import { Defaulted, IsIntFrom, IsOneOf, Optional } from './field-validators';

export const HISTORY_STRATEGIES = ['drop', 'summarize'] as const;
export type HistoryStrategy = (typeof HISTORY_STRATEGIES)[number];

/**
 * `spec.agent.history` (ours, CONFIG.md): how much of a long conversation the model receives.
 * Whole turns (a user message and everything answered to it, tool calls with their results) are
 * left out oldest first; the system prompt, the user context and the current turn always stay.
 * `drop` leaves them out; `summarize` replaces them by a summary the model writes (v3 tasks).
 * Without limits the whole history is sent, as before.
 */
export class HistoryConfig {
  /** At most this many history messages (user, assistant, tool), not counting the system prompt and user context. */
  @Optional() @IsIntFrom(1) max_messages?: number;
  /** At most this many tokens of model input (estimated), system prompt and user context included. */
  @Optional() @IsIntFrom(1) max_tokens?: number;
  @Defaulted() @IsOneOf(HISTORY_STRATEGIES) strategy: HistoryStrategy = 'drop';
}
