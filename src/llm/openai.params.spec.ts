import type { ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions';
import { LlmMessage } from './llm-client.port';
import { chatBodyJson, toChatParams } from './openai.params';

describe('chatBodyJson', () => {
  const history: LlmMessage[] = [
    { role: 'system', content: 'Be terse.' },
    { role: 'user', content: [{ type: 'text', text: 'é "quoted" \n line' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'weather-get', arguments: '{"city":"Oslo"}' }] },
    { role: 'tool', tool_call_id: 'c1', content: '{"t":3}' },
    { role: 'assistant', content: 'Cold.' },
  ] as LlmMessage[];

  it('is JSON.stringify of the body, byte for byte, whatever else the body carries', () => {
    const bodies: ChatCompletionCreateParamsBase[] = [
      toChatParams({ model: 'gpt-4o', messages: history }),
      { ...toChatParams({ model: 'gpt-4o', messages: history, temperature: 0, maxTokens: 5 }), stream: false },
      { ...toChatParams({ model: 'o3', messages: history.map((m) => Object.freeze({ ...m })) }), stream: true, stream_options: { include_usage: true } },
      toChatParams({ model: 'm', messages: [], tools: [{ name: 't', description: 'd', parameters: { type: 'object' } }] }),
    ];
    for (const body of bodies) expect(chatBodyJson(body)).toBe(JSON.stringify(body));
  });

  it('serializes a frozen message once, and a message that may still change every time', () => {
    let serialized = 0;
    const counted = () => ({ role: 'user', content: 'hi', toJSON: () => (serialized++, { role: 'user', content: 'hi' }) }) as unknown as LlmMessage;
    const frozen = Object.freeze(counted());
    const open = counted();
    for (let turn = 0; turn < 3; turn++) chatBodyJson(toChatParams({ model: 'm', messages: [frozen, open] }));
    expect(serialized).toBe(1 + 3);
  });

  it('converts a frozen assistant turn with tool calls once, into a frozen message of its own', () => {
    const asked = Object.freeze({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'f', arguments: '{}' }] }) as LlmMessage;
    const first = toChatParams({ model: 'm', messages: [asked] }).messages[0];
    expect(first).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] });
    expect(toChatParams({ model: 'm', messages: [asked] }).messages[0]).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });
});
