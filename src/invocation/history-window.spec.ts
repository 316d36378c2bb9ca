import type { LlmMessage } from '../llm/llm-client.port';
import { CHARS_PER_4 } from '../llm/token-counter';
import { fitHistory, leaveOutOlderHalf, turnsOf } from './history-window';

const user = (content: string): LlmMessage => ({ role: 'user', content });
const answer = (content: string): LlmMessage => ({ role: 'assistant', content });
const call = (id: string): LlmMessage => ({ role: 'assistant', content: null, tool_calls: [{ id, name: 'p-f', arguments: '{}' }] });
const result = (id: string): LlmMessage => ({ role: 'tool', tool_call_id: id, content: `result ${id}` });
const ctx = user('The following user context was provided:\n  name: Ada\n');

/** ctx, then turn 1 (plain), turn 2 (a tool round), turn 3 (plain), then the current question. */
const conversation: LlmMessage[] = [
  ctx,
  user('one'),
  answer('1'),
  user('two'),
  call('c1'),
  result('c1'),
  call('c2'),
  result('c2'),
  answer('2'),
  user('three'),
  answer('3'),
  user('now'),
];
const roles = (ms: readonly LlmMessage[]) => ms.map((m) => (m.role === 'tool' ? `tool:${m.tool_call_id}` : `${m.role}:${String(m.content)}`));

describe('turnsOf', () => {
  it('splits at user messages, keeping tool calls with their results', () => {
    expect(turnsOf(conversation.slice(1)).map((t) => t.length)).toEqual([2, 6, 2, 1]);
    // assistant messages before the first user message form their own turn
    expect(turnsOf([answer('hi'), user('q')]).map((t) => t.length)).toEqual([1, 1]);
  });
});

describe('fitHistory', () => {
  const base = { pinnedHead: 1, counter: CHARS_PER_4 };

  it('keeps everything without limits', () => {
    const w = fitHistory(conversation, { ...base, limits: undefined });
    expect(w.messages).toEqual(conversation);
    expect(w.omitted).toEqual([]);
    expect(w.omittedTurns).toBe(0);
    expect(w.pinned).toBe(1);
    // not copied: a window is read-only (its type says so), and this runs on every follow-on
    expect(w.messages).toBe(conversation);
  });

  it('without limits, gives what the turn-by-turn fit gives (a limit no turn reaches)', () => {
    const heads = [answer('before any question'), ...conversation];
    for (const pinnedHead of [0, 1, 2]) {
      const open = fitHistory(heads, { ...base, pinnedHead, limits: {} });
      expect(open).toEqual(fitHistory(heads, { ...base, pinnedHead, limits: { max_messages: 1000 } }));
    }
    expect(fitHistory([], { ...base, limits: undefined })).toEqual({ messages: [], pinned: 0, omitted: [], omittedTurns: 0 });
  });

  it('max_messages: leaves out the oldest whole turns; the user context always stays', () => {
    const w = fitHistory(conversation, { ...base, limits: { max_messages: 3 } });
    expect(roles(w.messages)).toEqual([roles([ctx])[0], 'user:three', 'assistant:3', 'user:now']);
    expect(w.omittedTurns).toBe(2);
    expect(w.omitted).toEqual(conversation.slice(1, 9));
  });

  it('never separates a tool call from its result: a turn that does not fit whole is left out whole', () => {
    // 8 messages: the last two turns (3) fit, the tool turn (6 more) would make 9
    const w = fitHistory(conversation, { ...base, limits: { max_messages: 8 } });
    expect(roles(w.messages).slice(1)).toEqual(['user:three', 'assistant:3', 'user:now']);
    const w9 = fitHistory(conversation, { ...base, limits: { max_messages: 9 } });
    expect(roles(w9.messages).slice(1)).toEqual([
      'user:two',
      'assistant:null',
      'tool:c1',
      'assistant:null',
      'tool:c2',
      'assistant:2',
      'user:three',
      'assistant:3',
      'user:now',
    ]);
    for (const w2 of [w, w9]) {
      const calls = new Set(w2.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => c.id) : [])));
      const results = new Set(w2.messages.flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : [])));
      expect(results).toEqual(calls);
    }
  });

  it('always keeps the current turn, even over the limit', () => {
    const w = fitHistory(conversation, { ...base, limits: { max_messages: 1, max_tokens: 1 } });
    expect(roles(w.messages).slice(1)).toEqual(['user:now']);
    expect(w.messages[0]).toBe(ctx);
  });

  it('max_tokens: counts the system prompt, the user context and each message', () => {
    const long = [user('a'.repeat(400)), answer('b'.repeat(400)), user('short'), answer('ok'), user('now')];
    // each long message is 100 + 4 tokens; the last two turns are (4+2)+(4+1)+(4+1) = 16; all 224
    const fits = (max_tokens: number, fixedTokens = 0) =>
      roles(fitHistory(long, { pinnedHead: 0, counter: CHARS_PER_4, limits: { max_tokens }, fixedTokens }).messages).length;
    expect(fits(1000)).toBe(5);
    expect(fits(100)).toBe(3);
    expect(fits(224)).toBe(5);
    expect(fits(223)).toBe(3);
    expect(fits(234, 10)).toBe(5);
    expect(fits(233, 10)).toBe(3);
  });

  it('applies both limits together', () => {
    const w = fitHistory(conversation, { ...base, limits: { max_messages: 100, max_tokens: 20 } });
    expect(roles(w.messages).slice(1)).toEqual(['user:now']);
  });
});

describe('leaveOutOlderHalf', () => {
  it('leaves out the oldest half of the earlier turns, keeping the user context and the current turn', () => {
    const w = leaveOutOlderHalf(fitHistory(conversation, { pinnedHead: 1, counter: CHARS_PER_4 }));
    expect(roles(w!.messages).slice(1)).toEqual(['user:three', 'assistant:3', 'user:now']);
    expect(w!.omittedTurns).toBe(2);
    expect(w!.omitted).toEqual(conversation.slice(1, 9));
  });

  it('gives nothing when there is no earlier turn left to leave out', () => {
    expect(leaveOutOlderHalf(fitHistory([ctx, user('now')], { pinnedHead: 1, counter: CHARS_PER_4 }))).toBeUndefined();
  });
});
