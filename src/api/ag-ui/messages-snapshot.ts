import type { Message } from '@ag-ui/core';
import type { RequestRecord, StoredMessage } from '../../state/state.entities';

/**
 * The thread's history as AG-UI messages (MESSAGES_SNAPSHOT): every stored message of the task's
 * requests in order, with the server's message ids. Requests an edit superseded are left out as
 * the model never sees them again (`edits` marks the request that replaced them).
 */
export function messagesOf(requests: RequestRecord[]): Message[] {
  const sorted = [...requests].sort((a, b) => a.seq - b.seq);
  const live = sorted.filter((r) => !sorted.some((later) => later.edits && later.seq > r.seq && r.seq >= later.edits.seq));
  return live.flatMap((r) => r.messages.map(messageOf));
}

function messageOf(m: StoredMessage): Message {
  switch (m.role) {
    case 'user':
      // One text item is plain text, as AG-UI clients send a typed message.
      if (m.items.length === 1 && m.items[0]!.content_type === 'text') return { id: m.id, role: 'user', content: m.items[0]!.content };
      return {
        id: m.id,
        role: 'user',
        content: m.items.map((i) =>
          i.content_type === 'text' ? { type: 'text' as const, text: i.content } : { type: 'image' as const, source: imageSource(i.content) },
        ),
      } as Message;
    case 'assistant':
      return {
        id: m.id,
        role: 'assistant',
        ...(m.content !== null ? { content: m.content } : {}),
        ...(m.tool_calls?.length
          ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
          : {}),
      };
    case 'tool':
      return { id: m.id, role: 'tool', toolCallId: m.tool_call_id, content: m.content, ...(m.is_error ? { error: m.content } : {}) };
  }
}

function imageSource(uri: string) {
  const match = /^data:([^;]+);base64,(.*)$/s.exec(uri);
  return { type: 'data', value: match?.[2] ?? '', mimeType: match?.[1] ?? 'image/png' };
}
