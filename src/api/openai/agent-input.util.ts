import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { ChatRequest, ChatTurn } from './chat-request.util';

/**
 * The body a stateless (v1/v2) agent's own route would take for this chat: the user and assistant
 * messages as its `chat_history` (system and developer messages are left out: the agent's own
 * prompt governs it), and `metadata.session_id`. `fieldOf` names a field of that body as the
 * client sent it (`chat_history.1.items.0.content` → `messages.2.content.0`).
 */
export function statelessBodyOf(chat: ChatRequest): { body: Record<string, unknown>; fieldOf: (field: string) => string } {
  const turns = chat.messages.filter((m) => m.role === 'user' || m.role === 'assistant');
  const body: Record<string, unknown> = { chat_history: turns.map((t) => ({ role: t.role, items: t.items })) };
  if (chat.sessionId) body.session_id = chat.sessionId;
  const fieldOf = (field: string) => {
    const m = /^chat_history\.(\d+)(\.items(?:\.(\d+))?)?/.exec(field);
    if (!m) return field.replace(/^session_id$/, 'metadata.session_id');
    return contentField(turns[Number(m[1])]?.index ?? Number(m[1]), m[2] ? (m[3] ?? '') : undefined, field.slice(m[0].length));
  };
  return { body, fieldOf };
}

/**
 * The v3 `UserMessage` of a turn on a stateful agent: the last message, which must be the user's
 * (the task keeps the history, so everything before it is left out, as AG-UI does), continuing
 * `metadata.task_id` when given.
 */
export function userMessageOf(chat: ChatRequest): { body: Record<string, unknown>; fieldOf: (field: string) => string } {
  const last: ChatTurn | undefined = chat.messages[chat.messages.length - 1];
  if (last?.role !== 'user') {
    const message = "the last message must be the user's: a stateful agent keeps the history (send metadata.task_id to continue a task)";
    throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'messages', message }] });
  }
  const body: Record<string, unknown> = { items: last.items };
  if (chat.taskId) body.task_id = chat.taskId;
  if (chat.sessionId) body.session_id = chat.sessionId;
  const fieldOf = (field: string) => {
    const m = /^items(?:\.(\d+))?/.exec(field);
    return m ? contentField(last.index, m[1] ?? '', '') : field.replace(/^(task_id|session_id)$/, 'metadata.$1');
  };
  return { body, fieldOf };
}

/** A validation error of the agent's body, its fields named as the client sent them; any other error as it is. */
export function renamedFields(err: unknown, fieldOf: (field: string) => string): unknown {
  if (!(err instanceof DomainError) || err.code !== ErrorCode.VALIDATION_FAILED || !err.errors) return err;
  const errors = err.errors.map((e) => ({ ...e, field: fieldOf(e.field) }));
  return new DomainError(err.code, `Invalid request: ${errors.map((e) => `${e.field || '(body)'}: ${e.message}`).join('; ')}`, { errors, cause: err });
}

/** `messages.{index}`, `.content` and the part when the error is in an item (what is inside an item is the part's). */
function contentField(index: number, part: string | undefined, rest: string): string {
  if (part === undefined) return `messages.${index}${rest}`;
  return `messages.${index}.content${part ? `.${part}` : ''}`;
}
