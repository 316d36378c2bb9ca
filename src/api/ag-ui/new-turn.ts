import type { Message } from '@ag-ui/core';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { StoredItem } from '../../state/state.entities';
import { imageDataUriProblem } from '../common/dto/image-data-uri';

/**
 * What a run without `resume` brings: the server keeps the thread's history (the task), so only
 * the end of `messages` is read and a client that sends the whole history is not duplicated.
 * - `tool` messages after the last assistant message: the results of client-side tool calls the
 *   previous run ended with (paired with the stored calls by `toolCallId`);
 * - otherwise the last user message: the new turn, as v3 items.
 */
export type Turn = { kind: 'message'; items: StoredItem[] } | { kind: 'tool-results'; results: Record<string, string> };

export function turnOf(messages: Message[]): Turn {
  const lastAssistant = messages.findLastIndex((m) => m.role === 'assistant');
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const answers = messages.slice(lastAssistant + 1).filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool');
  if (lastAssistant >= 0 && lastUser < lastAssistant && answers.length) {
    return { kind: 'tool-results', results: Object.fromEntries(answers.map((m) => [m.toolCallId, m.error ? `Error: ${m.error}` : textOf(m.content)])) };
  }
  if (lastUser < 0) throw invalid('messages', 'messages must hold a user message (the new turn), tool results, or the run must carry resume entries');
  const content = (messages[lastUser] as Extract<Message, { role: 'user' }>).content;
  const items: StoredItem[] = typeof content === 'string' ? [{ content_type: 'text', content }] : content.map((part, i) => itemOf(part, lastUser, i));
  if (!items.length) throw invalid(`messages[${lastUser}].content`, 'the user message is empty');
  return { kind: 'message', items };
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => ((p as { type?: string }).type === 'text' ? String((p as { text?: unknown }).text ?? '') : '')).join('');
  return JSON.stringify(content ?? '');
}

function itemOf(part: unknown, m: number, i: number): StoredItem {
  const p = (part ?? {}) as { type?: string; text?: string; source?: { type?: string; value?: string; mimeType?: string } };
  if (p.type === 'text' && typeof p.text === 'string') return { content_type: 'text', content: p.text };
  if (p.type === 'image' && p.source?.type === 'data' && typeof p.source.value === 'string') {
    const uri = `data:${p.source.mimeType ?? 'image/png'};base64,${p.source.value}`;
    const problem = imageDataUriProblem(uri);
    if (!problem) return { content_type: 'image', content: uri };
    throw invalid(`messages[${m}].content[${i}]`, problem);
  }
  throw invalid(`messages[${m}].content[${i}]`, 'a content part must be text, or an image with inline base64 data');
}

export function invalid(field: string, message: string): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, `Invalid RunAgentInput: ${field}: ${message}`, { errors: [{ field, message }] });
}
