import type { ContentItem } from './llm-content';

/** A validated stateless (v1/v2) input, as the stateless invoker takes it. */
export interface StatelessInput {
  session_id?: string;
  chat_history?: { role: 'user' | 'assistant'; items: ContentItem[] }[];
  user_context?: Record<string, string>;
}
