import { DomainError, FieldError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { ContentItem } from '../../invocation/llm-content';
import { CLIENT_ID } from '../v3/client-id';

/** One message of the conversation, its content as our items (`messages.{index}` in errors). */
export interface ChatTurn {
  role: 'system' | 'developer' | 'user' | 'assistant';
  items: ContentItem[];
  /** Its place in `messages`, so an error in a later check names the field the client sent. */
  index: number;
}

/** A `POST /openai/v1/chat/completions` body, as the front door uses it (docs/openai.md, Mapping). */
export interface ChatRequest {
  /** `{name}/{version}` of the agent. */
  model: string;
  messages: ChatTurn[];
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  includeUsage: boolean;
  /** `metadata.task_id`: the task (stateful agents) a turn continues. */
  taskId?: string;
  /** `metadata.session_id`: the session of a new task, or of a stateless call. */
  sessionId?: string;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant']);

/**
 * Reads a chat-completion request. Every field we cannot honour and would silently get wrong is
 * a 400 naming it (client-side `tools`, `n` > 1, tool and function messages, audio and file
 * parts); the sampling parameters the agent's own config decides (temperature, max_tokens, ...)
 * are ignored, as is every key we do not know. All problems are reported at once.
 */
export function readChatRequest(body: unknown): ChatRequest {
  if (!isObject(body)) throw invalid([{ field: '', message: 'the body must be a JSON object' }]);
  const errors: FieldError[] = [];
  const model = body.model;
  if (typeof model !== 'string' || !model) errors.push({ field: 'model', message: 'model must be "{name}/{version}" of an agent' });
  const messages = readMessages(body.messages, errors);
  const stream = optional(body.stream, 'stream', 'boolean', errors) ?? false;
  const streamOptions = optional(body.stream_options, 'stream_options', 'object', errors);
  const includeUsage = optional(streamOptions?.include_usage, 'stream_options.include_usage', 'boolean', errors) ?? false;
  if (body.n !== undefined && body.n !== null && body.n !== 1) errors.push({ field: 'n', message: 'only one choice is generated: n must be 1' });
  for (const key of ['tools', 'functions'] as const) {
    const v = body[key];
    if (v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0)) {
      errors.push({ field: key, message: `${key} are not supported: the agent calls its own tools on the server` });
    }
  }
  const metadata = optional(body.metadata, 'metadata', 'object', errors) ?? {};
  const taskId = clientId(metadata.task_id, 'metadata.task_id', errors);
  const sessionId = clientId(metadata.session_id, 'metadata.session_id', errors);
  if (errors.length) throw invalid(errors);
  return { model: model as string, messages, stream, includeUsage, taskId, sessionId };
}

function readMessages(value: unknown, errors: FieldError[]): ChatTurn[] {
  if (!Array.isArray(value) || value.length === 0) {
    errors.push({ field: 'messages', message: 'messages must be a non-empty array' });
    return [];
  }
  return value.flatMap((m, index) => {
    const field = `messages.${index}`;
    if (!isObject(m)) {
      errors.push({ field, message: 'a message must be an object' });
      return [];
    }
    if (!ROLES.has(m.role as string)) {
      const message =
        m.role === 'tool' || m.role === 'function'
          ? `${String(m.role)} messages are not supported: the agent runs its own tools`
          : 'role must be "system", "developer", "user" or "assistant"';
      errors.push({ field: `${field}.role`, message });
      return [];
    }
    if (Array.isArray(m.tool_calls) && m.tool_calls.length) {
      errors.push({ field: `${field}.tool_calls`, message: 'tool calls are not supported: the agent runs its own tools' });
      return [];
    }
    const items = itemsOf(m.content, `${field}.content`, errors);
    return items ? [{ role: m.role as ChatTurn['role'], items, index }] : [];
  });
}

/** A message's content as our items: a string is one text item; parts are text or `data:` images. */
function itemsOf(content: unknown, field: string, errors: FieldError[]): ContentItem[] | undefined {
  if (typeof content === 'string') return [{ content_type: 'text', content }];
  if (!Array.isArray(content) || content.length === 0) {
    errors.push({ field, message: 'content must be a string or a non-empty array of parts' });
    return undefined;
  }
  const items: ContentItem[] = [];
  content.forEach((part, j) => {
    if (isObject(part) && part.type === 'text' && typeof part.text === 'string') items.push({ content_type: 'text', content: part.text });
    else if (isObject(part) && part.type === 'image_url' && isObject(part.image_url) && typeof part.image_url.url === 'string') {
      items.push({ content_type: 'image', content: part.image_url.url });
    } else errors.push({ field: `${field}.${j}`, message: 'a part must be {type: "text", text} or {type: "image_url", image_url: {url}} (a data: URI)' });
  });
  return items.length === content.length ? items : undefined;
}

type Kind = { boolean: boolean; object: Record<string, unknown> };

function optional<K extends keyof Kind>(value: unknown, field: string, kind: K, errors: FieldError[]): Kind[K] | undefined {
  if (value === undefined || value === null) return undefined;
  if (kind === 'object' ? isObject(value) : typeof value === kind) return value as Kind[K];
  errors.push({ field, message: `${field} must be ${kind === 'object' ? 'an object' : 'a boolean'}` });
  return undefined;
}

function clientId(value: unknown, field: string, errors: FieldError[]): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && CLIENT_ID.test(value)) return value;
  errors.push({ field, message: `${field} must be 1 to 128 characters: letters, digits, "-", "_", "." or ":"` });
  return undefined;
}

function invalid(errors: FieldError[]): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, `Invalid request: ${errors.map((e) => `${e.field || '(body)'}: ${e.message}`).join('; ')}`, { errors });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
