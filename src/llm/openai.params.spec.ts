import { fullGc } from '../../test/support/kept-heap';
import { LlmMessage } from './llm-client.port';
import { ChatBody, chatBodyBytes, toChatMessage, toChatParams, withChunk } from './openai.params';

/** The body as the model client sends it, as text. */
const chatBodyJson = (body: ChatBody) => Buffer.concat(chatBodyBytes(body)).toString('utf8');
/** What it must be: JSON.stringify of OpenAI's form of the body. */
const openAiJson = (body: ChatBody) => JSON.stringify({ ...body, messages: body.messages.map(toChatMessage) });

describe('chatBodyBytes', () => {
  const history: LlmMessage[] = [
    { role: 'system', content: 'Be terse.' },
    { role: 'user', content: [{ type: 'text', text: 'é "quoted" \n line' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'weather-get', arguments: '{"city":"Oslo"}' }] },
    { role: 'tool', tool_call_id: 'c1', content: '{"t":3}' },
    { role: 'assistant', content: 'Cold.' },
  ] as LlmMessage[];

  it("is JSON.stringify of the body in OpenAI's form, byte for byte, whatever else the body carries", () => {
    const bodies: ChatBody[] = [
      toChatParams({ model: 'gpt-4o', messages: history }),
      { ...toChatParams({ model: 'gpt-4o', messages: history, temperature: 0, maxTokens: 5 }), stream: false },
      { ...toChatParams({ model: 'o3', messages: history.map((m) => Object.freeze({ ...m })) }), stream: true, stream_options: { include_usage: true } },
      toChatParams({ model: 'm', messages: [], tools: [{ name: 't', description: 'd', parameters: { type: 'object' } }] }),
    ];
    for (const body of bodies) expect(chatBodyJson(body)).toBe(openAiJson(body));
  });

  it('serializes a frozen message once, and a message that may still change every time', () => {
    let serialized = 0;
    const counted = () => ({ role: 'user', content: 'hi', toJSON: () => (serialized++, { role: 'user', content: 'hi' }) }) as unknown as LlmMessage;
    const frozen = Object.freeze(counted());
    const open = counted();
    for (let turn = 0; turn < 3; turn++) chatBodyJson(toChatParams({ model: 'm', messages: [frozen, open] }));
    expect(serialized).toBe(1 + 3);
  });

  describe('a task history sent turn after turn', () => {
    const frozenTurn = (i: number): LlmMessage[] => [
      Object.freeze({ role: 'user', content: `question ${i}` }) as LlmMessage,
      Object.freeze({ role: 'assistant', content: `answer ${i} "é"` }) as LlmMessage,
    ];
    const system = () => ({ role: 'system', content: 'Be terse.' }) as LlmMessage;
    const bodyOf = (history: LlmMessage[], text: string) => toChatParams({ model: 'm', messages: [system(), ...history, { role: 'user', content: text }] });

    it('is JSON.stringify of each turn, byte for byte, as the history grows, is edited and is windowed', () => {
      const history: LlmMessage[] = [];
      for (let i = 0; i < 30; i++) {
        const body = bodyOf(history, `turn ${i}`);
        expect(chatBodyJson(body)).toBe(openAiJson(body));
        // The same history sent again (a retry): the same bytes.
        expect(chatBodyJson(body)).toBe(openAiJson(body));
        history.push(...frozenTurn(i));
      }
      // An edit: a turn in the middle replaced (new objects), the later turns gone.
      const edited = [...history.slice(0, 20), ...frozenTurn(99)];
      const afterEdit = bodyOf(edited, 'after the edit');
      expect(chatBodyJson(afterEdit)).toBe(openAiJson(afterEdit));
      // A window: the oldest turns dropped, the same objects after them.
      const windowed = bodyOf(history.slice(10), 'windowed');
      expect(chatBodyJson(windowed)).toBe(openAiJson(windowed));
      // The full history again, after both: still its own bytes.
      const full = bodyOf(history, 'again');
      expect(chatBodyJson(full)).toBe(openAiJson(full));
    });

    it('keeps a long history in a few chunks, not one joined buffer: 600 turns, byte for byte, at most a few parts', () => {
      const history: LlmMessage[] = [];
      let previous: Buffer[] = [];
      let reused = 0;
      for (let i = 0; i < 600; i++) {
        const body = bodyOf(history, `turn ${i}`);
        const parts = chatBodyBytes(body);
        expect(Buffer.concat(parts).toString('utf8')).toBe(openAiJson(body));
        // Chunks halve at least from the oldest: log2 of the history's bytes, plus the text around them.
        expect(parts.length).toBeLessThanOrEqual(20);
        // The bulk of the history is the very buffer the last turn sent, not a copy of it.
        const largest = parts.reduce((a, b) => (b.length > a.length ? b : a));
        if (previous.includes(largest)) reused++;
        previous = parts;
        history.push(...frozenTurn(i));
      }
      expect(reused).toBeGreaterThan(500);
    });

    it('finds where a long frozen history ends by its kept run, not by checking every message again', () => {
      const history: LlmMessage[] = [];
      for (let i = 0; i < 300; i++) history.push(...frozenTurn(i));
      chatBodyBytes(bodyOf(history, 'first'));
      history.push(...frozenTurn(300));
      const checked = jest.spyOn(Object, 'isFrozen');
      const body = bodyOf(history, 'next');
      expect(Buffer.concat(chatBodyBytes(body)).toString('utf8')).toBe(openAiJson(body));
      // The 600 kept messages by pointer comparison; the two new ones, the system and the last user message checked.
      expect(checked.mock.calls.length).toBeLessThan(20);
      checked.mockRestore();
    });

    it('keeps one run for a conversation whose window slides, not one per turn for as long as its messages live', () => {
      const kept = () => {
        fullGc();
        const m = process.memoryUsage();
        return m.heapUsed + m.arrayBuffers;
      };
      const history: LlmMessage[] = [];
      const turn = (i: number) => {
        const body = bodyOf(history.slice(-40), `turn ${i}`);
        expect(Buffer.concat(chatBodyBytes(body)).toString('utf8')).toBe(openAiJson(body));
        history.push(Object.freeze({ role: 'user', content: `question ${i} ${'q'.repeat(100)}` }) as LlmMessage);
        history.push(Object.freeze({ role: 'assistant', content: `answer ${i} ${'a'.repeat(100)}` }) as LlmMessage);
      };
      for (let i = 0; i < 100; i++) turn(i);
      const before = kept();
      for (let i = 100; i < 1100; i++) turn(i);
      // The messages themselves (two of ~120 characters a turn) are ~0.6 KB a turn; a window's run
      // (40 messages, ~5 KB of bytes) kept per turn was ~9 KB more.
      expect((kept() - before) / 1000).toBeLessThan(1500);
    });

    it('serializes each frozen message once over the turns', () => {
      let serialized = 0;
      const counted = (i: number) =>
        Object.freeze({ role: 'user', content: `m${i}`, toJSON: () => (serialized++, { role: 'user', content: `m${i}` }) }) as unknown as LlmMessage;
      const history: LlmMessage[] = [];
      for (let i = 0; i < 40; i++) {
        chatBodyJson(bodyOf(history, 'next'));
        history.push(counted(i));
      }
      expect(serialized).toBe(39);
    });
  });

  it("sends an assistant turn's tool calls in OpenAI's form, converted once for a frozen one; the request's messages passed as they are", () => {
    const asked = Object.freeze({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', name: 'f', arguments: '{}' }] }) as LlmMessage;
    const request = { model: 'm', messages: [asked] };
    // toChatParams does not walk the history (it did, on every turn, to decide whether to convert).
    expect(toChatParams(request).messages).toBe(request.messages);
    const openAi =
      '{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}';
    expect(chatBodyJson(toChatParams(request))).toBe(openAi);
    const mapped = jest.spyOn((asked as { tool_calls: unknown[] }).tool_calls, 'map');
    expect(chatBodyJson(toChatParams(request))).toBe(openAi);
    expect(mapped).not.toHaveBeenCalled();
    // One that may still change is converted every time, as it is then.
    const open = { role: 'assistant', content: 'x', tool_calls: [{ id: 'c2', name: 'g', arguments: '{}' }] } as LlmMessage;
    chatBodyJson(toChatParams({ model: 'm', messages: [open] }));
    (open as { content: string }).content = 'y';
    expect(chatBodyJson(toChatParams({ model: 'm', messages: [open] }))).toContain('"content":"y"');
  });
});

describe('withChunk', () => {
  it('appends, merging the newest chunks while one is not smaller than the one before; the given chunks untouched', () => {
    let chunks: Buffer[] = [];
    let text = '';
    for (let i = 0; i < 1000; i++) {
      const before = chunks;
      const frozen = [...before];
      const piece = `<${i}>`;
      chunks = withChunk(before, Buffer.from(piece));
      text += piece;
      expect(before).toEqual(frozen);
      expect(Buffer.concat(chunks).toString()).toBe(text);
      for (let k = 1; k < chunks.length; k++) expect(chunks[k]!.length).toBeLessThan(chunks[k - 1]!.length);
    }
    expect(chunks.length).toBeLessThanOrEqual(Math.ceil(Math.log2(text.length)) + 1);
  });
});
