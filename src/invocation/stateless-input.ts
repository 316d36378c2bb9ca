import type { ContentItem } from './llm-content';

/** A validated stateless (v1/v2) input, as the stateless invoker takes it. */
export interface StatelessInput {
  session_id?: string;
  chat_history?: { role: 'user' | 'assistant'; items: ContentItem[] }[];
  user_context?: Record<string, string>;
  /** A custom input type's validated body (defaults filled in): the fields Sequential templates read. */
  fields?: Record<string, unknown>;
}
