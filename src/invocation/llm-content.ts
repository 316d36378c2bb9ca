import { LlmContentPart, LlmMessage } from '../llm/llm-client.port';

export interface ContentItem {
  content_type: 'text' | 'image';
  content: string;
}

/** Items become a plain string when all are text (what every provider accepts), else content parts. */
export function toLlmContent(items: ContentItem[]): string | LlmContentPart[] {
  // A loop, not every/map/join: every turn converts its message here (a single text item, mostly).
  let text = '';
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.content_type === 'image') return contentParts(items);
    // As join writes them: a missing content is empty.
    text = i === 0 ? (item.content ?? '') : `${text}\n${item.content ?? ''}`;
  }
  return text;
}

function contentParts(items: ContentItem[]): LlmContentPart[] {
  return items.map((i) => (i.content_type === 'image' ? { type: 'image_url', image_url: { url: i.content } } : { type: 'text', text: i.content }));
}

/**
 * Upstream injects the user context as an extra user message ahead of the history, in exactly this
 * text shape (every line, the last included, ends with a newline: upstream's tests pin it); models
 * and prompts written for teal-agents expect it.
 */
export function userContextMessage(userContext: Record<string, string> | undefined): LlmMessage | undefined {
  const entries = Object.entries(userContext ?? {});
  if (!entries.length) return undefined;
  const lines = entries.map(([k, v]) => `  ${k}: ${v}\n`).join('');
  return { role: 'user', content: `The following user context was provided:\n${lines}` };
}

/**
 * Chat-completions APIs accept images only from the user; an image in an earlier assistant turn is
 * kept as a marker rather than pasted into the prompt as a (huge) base64 text.
 */
export const ASSISTANT_IMAGE_MARKER = '[image]';

export function historyToMessages(history: { role: 'user' | 'assistant'; items: ContentItem[] }[]): LlmMessage[] {
  return history.map((m) =>
    m.role === 'assistant'
      ? {
          role: 'assistant',
          content: m.items.map((i) => (i.content_type === 'image' ? ASSISTANT_IMAGE_MARKER : i.content)).join('\n'),
        }
      : { role: 'user', content: toLlmContent(m.items) },
  );
}
