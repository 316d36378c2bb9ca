import { postJson, request } from './http';

export const text = (content: string) => ({ content_type: 'text', content });

/** A few calls of the v3 API for tests: invoke, follow on, read the task. */
export function v3Client(base: string, headers: Record<string, string> = {}) {
  return {
    send: (body: Record<string, unknown>) => postJson(base, body, headers),
    say: (content: string, extra: Record<string, unknown> = {}) => postJson(base, { items: [text(content)], ...extra }, headers),
    task: (taskId: string) => request(`${base}/tasks/${taskId}`, { headers }),
  };
}

/** Role and text of each message the model received, for message-by-message assertions. */
export function modelInput(body: { messages: { role: string; content: unknown; tool_calls?: unknown; tool_call_id?: string }[] }) {
  return body.messages.map((m) => [m.role, typeof m.content === 'string' ? m.content : JSON.stringify(m.content)]);
}
