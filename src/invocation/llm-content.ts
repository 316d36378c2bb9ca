import { LlmContentPart, LlmMessage } from '../llm/llm-client.port';

export interface ContentItem {
  content_type: 'text' | 'image';
  content: string;
}

/** Items become a plain string when all are text (what every provider accepts), else content parts. */
export function toLlmContent(items: ContentItem[]): string | LlmContentPart[] {
  if (items.every((i) => i.content_type !== 'image')) return items.map((i) => i.content).join('\n');
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
