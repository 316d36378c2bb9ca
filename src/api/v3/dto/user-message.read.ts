import { imageDataUriProblem } from '../../common/dto/image-data-uri';
import { MultiModalItemDto } from '../../common/dto/multi-modal-item.dto';
import { validateBody } from '../../../common/validation/validate-body';
import { CLIENT_ID } from '../client-id';
import { UserMessageDto } from './user-message.dto';

/**
 * The body of a v3 invoke as a UserMessageDto. Nearly every body has the plain shape (text or
 * image items, maybe ids and a user context, no other keys): that shape is checked and built here
 * directly, the same instance `validateBody` would give, without class-transformer and
 * class-validator walking their metadata on every turn (a few % of a turn's CPU). Anything else,
 * every invalid body included, goes to `validateBody`, so errors are worded by the one validator.
 */
export function readUserMessage(body: unknown): UserMessageDto {
  return plainUserMessage(body) ?? validateBody(UserMessageDto, body);
}

const BODY_KEYS = new Set(['session_id', 'task_id', 'items', 'user_context']);

/** The plain shape as a UserMessageDto, or undefined when the body is anything else (valid or not). */
export function plainUserMessage(body: unknown): UserMessageDto | undefined {
  if (!isPlainObject(body)) return undefined;
  for (const key in body) if (!BODY_KEYS.has(key)) return undefined;
  const { session_id, task_id, items, user_context } = body as Record<string, unknown>;
  if ('session_id' in body && !isClientId(session_id)) return undefined;
  if ('task_id' in body && !isClientId(task_id)) return undefined;
  if (!Array.isArray(items) || items.length === 0) return undefined;
  const dtoItems: MultiModalItemDto[] = [];
  for (const item of items) {
    const dtoItem = plainItem(item);
    if (!dtoItem) return undefined;
    dtoItems.push(dtoItem);
  }
  let context: Record<string, string> | undefined;
  if ('user_context' in body) {
    context = plainStringRecord(user_context);
    if (!context) return undefined;
  }
  // Assigned in the body's key order, as class-transformer does (the class declares the fields, so
  // the instance's own keys come out in the same order either way).
  const dto = new UserMessageDto();
  for (const key in body) {
    if (key === 'items') dto.items = dtoItems;
    else if (key === 'user_context') dto.user_context = context;
    else (dto as unknown as Record<string, unknown>)[key] = (body as Record<string, unknown>)[key];
  }
  return dto;
}

function plainItem(item: unknown): MultiModalItemDto | undefined {
  if (!isPlainObject(item)) return undefined;
  let type: unknown = 'text';
  let content: unknown;
  for (const key in item) {
    if (key === 'content_type') type = (item as Record<string, unknown>)[key];
    else if (key === 'content') content = (item as Record<string, unknown>)[key];
    else return undefined;
  }
  if (typeof content !== 'string') return undefined;
  if (type !== 'text' && (type !== 'image' || imageDataUriProblem(content) !== undefined)) return undefined;
  const dto = new MultiModalItemDto();
  dto.content_type = type;
  dto.content = content;
  return dto;
}

function plainStringRecord(value: unknown): Record<string, string> | undefined {
  if (!isPlainObject(value)) return undefined;
  const out: Record<string, string> = {};
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    if (typeof v !== 'string' || key === '__proto__') return undefined;
    out[key] = v;
  }
  return out;
}

function isClientId(value: unknown): value is string {
  return typeof value === 'string' && CLIENT_ID.test(value);
}

/** What JSON.parse gives for `{...}`: an object whose prototype is a plain one (no array, no class instance). */
function isPlainObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto !== null && Object.getPrototypeOf(proto) === null;
}
