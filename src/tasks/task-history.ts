import { LlmMessage } from '../llm/llm-client.port';
import { toLlmContent, userContextMessage } from '../invocation/llm-content';
import { RequestRecord, StoredMessage } from '../state/state.entities';

/** Requests whose messages the model sees again on a follow-on. */
const REPLAYED = new Set(['Completed']);

/**
 * The model input of a follow-on, rebuilt from the stored requests: the user context, then every
 * earlier completed request's messages in order (user turn, assistant turns with their tool calls,
 * tool results), then the current request's messages. Failed and canceled requests stay in the
 * task record but are not replayed, so a failure never leaves a dangling turn in the model input.
 * (The system prompt is added by the AgentRunner.)
 */
export function buildTaskConversation(earlier: RequestRecord[], current: RequestRecord): LlmMessage[] {
  const userContext = current.userContext ?? [...earlier].reverse().find((r) => r.userContext)?.userContext;
  const out: LlmMessage[] = [];
  const ctx = userContextMessage(userContext);
  if (ctx) out.push(ctx);
  for (const r of earlier) if (REPLAYED.has(r.status)) out.push(...r.messages.map(toLlmMessage));
  out.push(...current.messages.map(toLlmMessage));
  return out;
}

export function toLlmMessage(m: StoredMessage): LlmMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: toLlmContent(m.items) };
    case 'assistant':
      return m.tool_calls?.length
        ? { role: 'assistant', content: m.content, tool_calls: m.tool_calls }
        : { role: 'assistant', content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  }
}
