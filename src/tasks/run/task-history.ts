import { newUuid } from '../../common/ids/uuid.util';
import { LlmMessage } from '../../llm/llm-client.port';
import type { ToolExecution } from '../../tools/tool-executor';
import { toLlmContent, userContextMessage } from '../../invocation/llm-content';
import { RequestRecord, StoredMessage, ToolCallTrace } from '../../state/state.entities';

/**
 * The model input of a follow-on, rebuilt from the stored requests: the user context, then every
 * earlier completed request's messages in order (user turn, assistant turns with their tool calls,
 * tool results), then the current request's messages. Failed and canceled requests stay in the
 * task record but are not replayed, so a failure never leaves a dangling turn in the model input.
 * (The system prompt is added by the AgentRunner.) `visible`: the earlier requests an edit has not
 * superseded (`withoutSuperseded`, lifecycle/edit.ts), which the caller has already worked out.
 */
export function buildTaskConversation(visible: readonly RequestRecord[], current: RequestRecord): LlmMessage[] {
  const ctx = userContextMessage(taskUserContext(visible, current));
  // Indexed loops into an array made at its final size: this runs over the whole history on every
  // follow-on, and an array grown by push is copied each time it outgrows its backing store.
  // (A record's replay has one message per stored message: replayOf.)
  let size = (ctx ? 1 : 0) + current.messages.length;
  for (let i = 0; i < visible.length; i++) if (visible[i]!.status === 'Completed') size += visible[i]!.messages.length;
  const out = new Array<LlmMessage>(size);
  let n = 0;
  if (ctx) out[n++] = ctx;
  for (let i = 0; i < visible.length; i++) {
    const r = visible[i]!;
    // Only completed requests' messages are replayed.
    if (r.status !== 'Completed') continue;
    const messages = replayOf(r);
    for (let j = 0; j < messages.length; j++) out[n++] = messages[j]!;
  }
  for (const m of current.messages) out[n++] = toLlmMessage(m);
  return out;
}

/** The user context a task's model input starts with: the current request's, else the latest one given. */
export function taskUserContext(earlier: readonly RequestRecord[], current: RequestRecord): Record<string, string> | undefined {
  let userContext = current.userContext;
  for (let i = earlier.length - 1; userContext === undefined && i >= 0; i--) userContext = earlier[i]!.userContext;
  return userContext;
}

/**
 * A stored request is immutable once read (the in-memory store hands out the same frozen record on
 * every read), so its model messages are converted once per record object, not on every follow-on:
 * on a long task that conversion was the part of a turn that grew with the history. They are
 * frozen too, so the model client serializes each of them once (openai.params.ts, `chatBodyBytes`).
 */
const replayed = new WeakMap<RequestRecord, readonly LlmMessage[]>();

function replayOf(r: RequestRecord): readonly LlmMessage[] {
  let messages = replayed.get(r);
  if (!messages) {
    messages = r.messages.map(toLlmMessage);
    if (Object.isFrozen(r)) {
      for (const m of messages) Object.freeze(m);
      replayed.set(r, messages);
    }
  }
  return messages;
}

export function toLlmMessage(m: StoredMessage): LlmMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: toLlmContent(m.items) };
    case 'assistant':
      return m.tool_calls?.length ? { role: 'assistant', content: m.content, tool_calls: m.tool_calls } : { role: 'assistant', content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  }
}

/**
 * The messages the tool loop appended (each assistant turn that asked for tools, then its tool
 * results), as stored: `toLlmMessage` gives them back unchanged. A tool result is `is_error` when
 * its call did not succeed.
 */
export function storedToolRounds(run: { appended: LlmMessage[]; toolExecutions: ToolExecution[] }, now: string): StoredMessage[] {
  const failed = new Set(run.toolExecutions.filter((e) => e.outcome !== 'ok').map((e) => e.id));
  return run.appended.map((m): StoredMessage => {
    switch (m.role) {
      case 'assistant':
        return { id: newUuid(), role: 'assistant', content: m.content, ...(m.tool_calls?.length ? { tool_calls: m.tool_calls } : {}), created_at: now };
      case 'tool':
        return { id: newUuid(), role: 'tool', tool_call_id: m.tool_call_id, content: m.content, is_error: failed.has(m.tool_call_id), created_at: now };
      default:
        throw new Error(`the tool loop does not append ${m.role} messages`);
    }
  });
}

/** One call of the execution trace (`RequestRecord.toolCalls`). */
export function toolCallTrace(e: ToolExecution): ToolCallTrace {
  const trace: ToolCallTrace = {
    id: e.id,
    name: e.name,
    arguments: e.arguments,
    started_at: e.started_at,
    duration_ms: e.duration_ms,
    outcome: e.outcome,
    result: e.result,
  };
  if (e.extra_data?.length) trace.extra_data = e.extra_data;
  return trace;
}
