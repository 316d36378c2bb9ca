import type { StoredItem } from '../../state/state.entities';

/** A validated v3 message (the API's `UserMessage`), as the stateful invoker takes it. */
export interface UserMessage {
  session_id?: string;
  task_id?: string;
  items: StoredItem[];
  user_context?: Record<string, string>;
  /** Where this request's events are POSTed (checked against the agent's allow_request_urls). */
  webhook_url?: string;
}
