import type { LlmRequest } from '../llm-client.port';
import { toolCommandReply } from './tool-commands';

const tools = [
  { name: 'Calculator-add', description: 'adds', parameters: { type: 'object' } },
  { name: 'todo-list_tasks', description: 'lists', parameters: { type: 'object' } },
];
const req = (messages: LlmRequest['messages']): LlmRequest => ({ model: 'local/echo', messages, tools });

describe('toolCommandReply (the offline models in the tool loop)', () => {
  it('turns /tool lines of the last user message into one turn of tool calls', () => {
    const r = toolCommandReply(
      req([
        { role: 'system', content: 's' },
        { role: 'user', content: 'please\n/tool Calculator-add {"a":1,"b":2}\n /tool todo-list_tasks' },
      ]),
    );
    expect(r).toEqual({
      kind: 'calls',
      calls: [
        { id: 'call_2_1', name: 'Calculator-add', arguments: '{"a":1,"b":2}' },
        { id: 'call_2_2', name: 'todo-list_tasks', arguments: '{}' },
      ],
    });
  });

  it('answers with the tool results once they are in', () => {
    const r = toolCommandReply(
      req([
        { role: 'user', content: '/tool Calculator-add {"a":1,"b":2}' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'a', name: 'Calculator-add', arguments: '{}' },
            { id: 'b', name: 'Calculator-add', arguments: '{}' },
          ],
        },
        { role: 'tool', tool_call_id: 'a', content: '3' },
        { role: 'tool', tool_call_id: 'b', content: 'Error: nope' },
      ]),
    );
    expect(r).toEqual({ kind: 'text', text: '3\nError: nope' });
  });

  it('names the tools it has when asked for one it does not, and ignores other messages', () => {
    expect(toolCommandReply(req([{ role: 'user', content: '/tool nope {}' }]))).toEqual({
      kind: 'text',
      text: 'Unknown tool nope. The tools of this agent: Calculator-add, todo-list_tasks.',
    });
    expect(toolCommandReply(req([{ role: 'user', content: 'hello /tool x' }]))).toBeUndefined();
  });

  it('says which tool sources did not answer, rather than just "none"', () => {
    const request: LlmRequest = {
      model: 'local/echo',
      messages: [{ role: 'user', content: '/tool test-echo {}' }],
      toolsUnavailable: ['MCP server test unreachable'],
    };
    expect(toolCommandReply(request)).toEqual({ kind: 'text', text: 'Unknown tool test-echo. The tools of this agent: none; MCP server test unreachable.' });
    expect(
      toolCommandReply({
        ...req([{ role: 'user', content: '/tool test-echo {}' }]),
        toolsUnavailable: ['MCP server a unreachable', 'MCP server b unreachable'],
      }),
    ).toEqual({
      kind: 'text',
      text: 'Unknown tool test-echo. The tools of this agent: Calculator-add, todo-list_tasks; MCP server a unreachable; MCP server b unreachable.',
    });
  });
});
