import type { LlmMessage, LlmRequest, LlmToolCall } from '../llm-client.port';

/** `/tool <name> <JSON arguments>`, one per line (docs/tools.md). */
const TOOL_LINE = /^\/tool\s+(\S+)(?:\s+([\s\S]*))?$/;

export type ToolCommandReply = { kind: 'calls'; calls: LlmToolCall[] } | { kind: 'text'; text: string };

/**
 * How the offline models take part in the tool loop, deterministically:
 * - the conversation ends with tool results → the answer is their contents, one per line;
 * - the last user message has `/tool <name> <json>` lines → one tool call per line, all in one turn
 *   (ids `call_<position>_<i>`, stable for a given conversation), or, if a name is not among the
 *   request's tools, a text saying which tools there are;
 * - otherwise undefined: the model answers as it normally does.
 */
export function toolCommandReply(request: LlmRequest): ToolCommandReply | undefined {
  const messages = request.messages;
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const results: string[] = [];
    for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) results.unshift((messages[i] as { content: string }).content);
    return { kind: 'text', text: results.join('\n') };
  }
  if (last?.role !== 'user') return undefined;
  const lines = textOf(last)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => TOOL_LINE.test(l));
  if (!lines.length) return undefined;
  const known = new Set((request.tools ?? []).map((t) => t.name));
  const calls: LlmToolCall[] = [];
  for (const [i, line] of lines.entries()) {
    const [, name, args] = TOOL_LINE.exec(line)!;
    if (!known.has(name!)) {
      const list = known.size ? [...known].join(', ') : 'none';
      // A server that did not answer is why a tool can be missing: say so rather than just "none".
      const down = request.toolsUnavailable?.length ? `; ${request.toolsUnavailable.join('; ')}` : '';
      return { kind: 'text', text: `Unknown tool ${name}. The tools of this agent: ${list}${down}.` };
    }
    calls.push({ id: `call_${messages.length}_${i + 1}`, name: name!, arguments: args?.trim() || '{}' });
  }
  return { kind: 'calls', calls };
}

function textOf(m: LlmMessage): string {
  const c = m.content;
  if (c === null) return '';
  if (typeof c === 'string') return c;
  return c.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}
