import { CHARS_PER_4, tokenCounterFor } from './token-counter';

describe('tokenCounterFor', () => {
  const text = 'The quick brown fox jumps over the lazy dog. '.repeat(20);

  it('counts OpenAI models with their real tokenizer (o200k for gpt-4o, cl100k for gpt-4), not characters/4', () => {
    // 10 tokens a sentence (plus the trailing space) in both encodings; characters/4 would say 225
    expect(tokenCounterFor('gpt-4o').count(text)).toBe(201);
    expect(tokenCounterFor('gpt-4o-mini').count('hello world')).toBe(2);
    expect(tokenCounterFor('gpt-4').count(text)).toBe(201);
    expect(tokenCounterFor('o3-mini').count('hello world')).toBe(2);
    // a word the encodings split differently: the two are really different tokenizers
    expect([tokenCounterFor('gpt-4o').count(' индустриализация'), tokenCounterFor('gpt-4-turbo').count(' индустриализация')]).toEqual([4, 6]);
  });

  it('falls back to characters/4 for any other model name', () => {
    expect(tokenCounterFor('my-azure-deployment')).toBe(CHARS_PER_4);
    expect(tokenCounterFor('llama3.1:8b').count(text)).toBe(Math.ceil(text.length / 4));
    expect(tokenCounterFor('local/echo')).toBe(CHARS_PER_4);
  });
});
