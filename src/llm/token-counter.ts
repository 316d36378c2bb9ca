import type { LlmMessage } from './llm-client.port';

/**
 * Estimates how many tokens a text takes for a model. The estimate only has to be good enough to
 * keep a conversation under a configured limit (`spec.agent.history.max_tokens`); the provider's
 * own count is what is billed and reported.
 *
 * OpenAI models are counted with their real tokenizer (`gpt-tokenizer`: o200k_base for the gpt-4o,
 * gpt-4.1, gpt-5 and o-series families, cl100k_base for gpt-4 and gpt-3.5); any other model name
 * (an Azure deployment, a local or third-party model) with the characters/4 estimate.
 */
export interface TokenCounter {
  count(text: string): number;
}

/** About 4 characters per token for English text (OpenAI's rule of thumb). */
export const CHARS_PER_4: TokenCounter = { count: (text) => Math.ceil(text.length / 4) };

const O200K = /^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d)/i;
const CL100K = /^(gpt-4|gpt-3\.5|gpt-35)/i;

type Encoding = 'o200k_base' | 'cl100k_base';
/** Loaded on first use only (each encoding's ranks take megabytes): one per encoding per process. */
const loaded = new Map<Encoding, TokenCounter>();

export function tokenCounterFor(model: string): TokenCounter {
  const name = model.replace(/^openai\//i, '');
  const encoding: Encoding | undefined = O200K.test(name) ? 'o200k_base' : CL100K.test(name) ? 'cl100k_base' : undefined;
  if (!encoding) return CHARS_PER_4;
  let counter = loaded.get(encoding);
  if (!counter) {
    const { countTokens } = load(encoding);
    counter = { count: (text) => countTokens(text) };
    loaded.set(encoding, counter);
  }
  return counter;
}

function load(encoding: Encoding): typeof import('gpt-tokenizer/encoding/o200k_base') {
  // require, not import: the ranks load only for an agent that limits its history by tokens.
  return encoding === 'o200k_base' ? require('gpt-tokenizer/encoding/o200k_base') : require('gpt-tokenizer/encoding/cl100k_base');
}

/** Per-message framing (role, separators), as OpenAI's cookbook counts it. */
const MESSAGE_OVERHEAD = 4;
/** A low-detail image; a high-detail one costs more, which an estimate may ignore. */
const IMAGE_TOKENS = 85;

export function messageTokens(m: LlmMessage, counter: TokenCounter): number {
  let n = MESSAGE_OVERHEAD;
  if (typeof m.content === 'string') n += counter.count(m.content);
  else if (Array.isArray(m.content)) for (const p of m.content) n += p.type === 'text' ? counter.count(p.text) : IMAGE_TOKENS;
  if (m.role === 'assistant') for (const c of m.tool_calls ?? []) n += counter.count(c.name) + counter.count(c.arguments) + MESSAGE_OVERHEAD;
  if (m.role === 'tool') n += counter.count(m.tool_call_id);
  return n;
}
