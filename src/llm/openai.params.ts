import type { ChatCompletionCreateParamsBase, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { LlmMessage, LlmRequest, LlmResult, TokenUsage } from './llm-client.port';

const REASONING_MODEL = /^(o\d|gpt-5)/i;

/**
 * A chat-completions body as we post it: OpenAI's parameters, with our messages as they are. They
 * differ from OpenAI's only in an assistant turn's tool calls, which `chatBodyBytes` converts as it
 * serializes each message (`toChatMessage`), once per message that cannot change: deciding here
 * whether any needed converting read every message of the history on every turn (a property
 * lookup on objects of many shapes, ~2 % of a turn on a 50-turn task; issue 27).
 */
export interface ChatBody extends Omit<ChatCompletionCreateParamsBase, 'messages'> {
  messages: readonly LlmMessage[];
}

/** Our request → the chat-completions parameters (everything but `stream`). */
export function toChatParams(request: LlmRequest): ChatBody {
  const params: ChatBody = { model: request.model, messages: request.messages };
  // `temperature: 0` is a value, not "unset".
  if (request.temperature !== undefined) params.temperature = request.temperature;
  if (request.maxTokens !== undefined) {
    // Reasoning models refuse `max_tokens`; many OpenAI-compatible servers know only `max_tokens`.
    if (REASONING_MODEL.test(request.model)) params.max_completion_tokens = request.maxTokens;
    else params.max_tokens = request.maxTokens;
  }
  if (request.reasoningEffort !== undefined) {
    (params as { reasoning_effort?: string }).reasoning_effort = request.reasoningEffort;
  }
  if (request.responseFormat) {
    const { name, description, schema } = request.responseFormat;
    params.response_format = { type: 'json_schema', json_schema: { name, ...(description ? { description } : {}), schema, strict: true } };
  }
  if (request.tools?.length) {
    params.tools = request.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  return params;
}

export function toUsage(u: { completion_tokens?: number; prompt_tokens?: number; total_tokens?: number } | null | undefined): TokenUsage {
  const completion = u?.completion_tokens ?? 0;
  const prompt = u?.prompt_tokens ?? 0;
  // Field order matters on the wire: upstream's TokenUsage serialises completion, prompt, total.
  return { completion_tokens: completion, prompt_tokens: prompt, total_tokens: u?.total_tokens ?? completion + prompt };
}

/** Our messages are OpenAI's, except an assistant turn's tool calls, which OpenAI nests under `function`. */
export function toChatMessage(m: LlmMessage): ChatCompletionMessageParam {
  if (m.role !== 'assistant' || !m.tool_calls?.length) return m as ChatCompletionMessageParam;
  return {
    role: 'assistant',
    content: m.content,
    tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
  };
}

/**
 * The JSON of each message that cannot change (frozen: the replayed history, task-history.ts),
 * made once per message object. A follow-on sends the whole history again; only its new messages
 * are serialized, so that part of a turn no longer grows with the task (issue 27).
 */
const messageJson = new WeakMap<LlmMessage, string>();

/** The JSON of OpenAI's form of `m` (`toChatMessage`). */
function jsonOf(m: LlmMessage): string {
  let json = messageJson.get(m);
  if (json === undefined) {
    json = JSON.stringify(toChatMessage(m));
    if (Object.isFrozen(m)) messageJson.set(m, json);
  }
  return json;
}

/**
 * The UTF-8 JSON of a run of frozen messages (a task's replayed history), kept for the next turn of
 * the same task: each follow-on sends the same run again with one turn more, so only the new
 * messages are serialized and encoded, not the whole history walked again (issue 27). Kept as
 * bytes, outside V8's heap, and sent as one part of the body (chatBodyBytes), where a kept string
 * was flattened on every extension and once more into the body string. Keyed by the run's last
 * message; `refs` is the run as it was built, checked message by message (a pointer comparison
 * each) before it is reused, so a history that changed (an edit, a window that dropped its oldest
 * turns) is never sent from an old run. One run is kept per task: extending a run drops the one it
 * came from, and so does a run that no longer matches (`forget`). Bounded by the messages' own
 * lifetime (a WeakMap): the run lives as long as its messages, which the task's stored records hold.
 */
interface FrozenRun {
  refs: readonly LlmMessage[];
  /**
   * The run's bytes in a few chunks, each older one larger than any newer (sent as parts, not
   * joined): extending a run adds a chunk and merges only the small newest ones, so a byte is copied
   * a few times over a task's life, where joining copied the whole history on every turn.
   */
  chunks: readonly Buffer[];
}
const runs = new WeakMap<LlmMessage, FrozenRun>();
/**
 * The same runs by their first message: where a body's frozen messages begin, the kept run that
 * starts there tells how far they go by pointer comparisons, not `Object.isFrozen` on each (a
 * follow-on of a 500-turn task checked 1,000 messages every turn). Frozen once, frozen for good.
 */
const runsByFirst = new WeakMap<LlmMessage, FrozenRun>();
/** Runs shorter than this are joined afresh (a fresh task, a short window): nothing worth keeping. */
const MIN_RUN = 8;
/** How far back from a run's end its predecessor's end is looked for (a turn adds a few messages). */
const RUN_LOOKBACK = 16;

/**
 * The JSON of `messages[start..end)`, every one frozen, joined by commas, as UTF-8 in chunks: from a
 * kept run when one matches. `known`: the kept run the caller already found to start the range (its
 * messages compared), so it is not looked for and compared again.
 */
function frozenRunBytes(messages: readonly LlmMessage[], start: number, end: number, known?: FrozenRun): readonly Buffer[] {
  // The kept run this one extends (ending at `messages[last]`), else none.
  let kept = known;
  let last = known ? start + known.refs.length - 1 : end - 1;
  for (const floor = Math.max(start, end - 1 - RUN_LOOKBACK); !kept && last >= floor; last--) {
    const found = runs.get(messages[last]!);
    if (!found) continue;
    if (sameRefs(found.refs, messages, start, last + 1)) kept = found;
    // A run that ended inside this one but began elsewhere (a window slid past its start, an edit
    // changed it) is an older state of this conversation: dropped, or every turn of a windowed task
    // kept a window's bytes for as long as its messages lived (~17 KB a turn; issue 27).
    else forget(found);
    if (kept) break;
  }
  if (kept && last + 1 === end) return kept.chunks;
  let json = kept ? '' : jsonOf(messages[start]!);
  for (let i = kept ? last + 1 : start + 1; i < end; i++) json += `,${jsonOf(messages[i]!)}`;
  const chunks = kept ? withChunk(kept.chunks, Buffer.from(json)) : [Buffer.from(json)];
  if (kept && runs.get(messages[last]!) === kept) runs.delete(messages[last]!);
  const run = { refs: messages.slice(start, end), chunks };
  runs.set(messages[end - 1]!, run);
  runsByFirst.set(messages[start]!, run);
  return chunks;
}

/** Drops a kept run from both maps (where they still name it). */
function forget(run: FrozenRun): void {
  const first = run.refs[0]!;
  const last = run.refs[run.refs.length - 1]!;
  if (runs.get(last) === run) runs.delete(last);
  if (runsByFirst.get(first) === run) runsByFirst.delete(first);
}

/** `chunks` with `next` after them, the newest merged while one is not smaller than the one before (a new array: a kept run's chunks may be on their way out). */
export function withChunk(chunks: readonly Buffer[], next: Buffer): Buffer[] {
  const out = [...chunks, next];
  while (out.length >= 2 && out[out.length - 1]!.length >= out[out.length - 2]!.length) {
    const newest = out.pop()!;
    out.push(Buffer.concat([out.pop()!, newest]));
  }
  return out;
}

function sameRefs(refs: readonly LlmMessage[], messages: readonly LlmMessage[], start: number, end: number): boolean {
  if (refs.length !== end - start) return false;
  for (let i = 0; i < refs.length; i++) if (refs[i] !== messages[start + i]) return false;
  return true;
}

/**
 * `JSON.stringify` of OpenAI's form of `body` (its messages as `toChatMessage` gives them) as UTF-8
 * bytes, byte for byte (model and messages are its first keys), in
 * parts sent one after the other: each message's JSON is reused (`jsonOf`) and a task's frozen
 * history is one part kept as bytes (`frozenRunBytes`), sent as it is, not copied into a body. The
 * model client writes the parts in one system call (http-exchange.ts, ExchangeOptions.body).
 */
export function chatBodyBytes(body: ChatBody): Buffer[] {
  const { model, messages, ...rest } = body;
  const parts: Buffer[] = [];
  let text = `{"model":${JSON.stringify(model)},"messages":[`;
  let first = true;
  const n = messages.length;
  for (let i = 0; i < n;) {
    if (!first) text += ',';
    first = false;
    if (!Object.isFrozen(messages[i])) {
      text += jsonOf(messages[i]!);
      i++;
      continue;
    }
    let end = i + 1;
    let known = runsByFirst.get(messages[i]!);
    if (known && known.refs.length <= n - i && sameRefs(known.refs, messages, i, i + known.refs.length)) end = i + known.refs.length;
    else known = undefined;
    while (end < n && Object.isFrozen(messages[end])) end++;
    if (end - i >= MIN_RUN) {
      parts.push(Buffer.from(text), ...frozenRunBytes(messages, i, end, known));
      text = '';
    } else {
      text += jsonOf(messages[i]!);
      for (let j = i + 1; j < end; j++) text += `,${jsonOf(messages[j]!)}`;
    }
    i = end;
  }
  const tail = JSON.stringify(rest);
  text += tail === '{}' ? ']}' : `],${tail.slice(1)}`;
  parts.push(Buffer.from(text));
  return parts;
}

/** Azure (and OpenAI moderation) cut a filtered answer short: that is an error, not an answer. */
export function checkFinish(result: LlmResult): LlmResult {
  if (result.finishReason === 'content_filter') {
    throw new DomainError(ErrorCode.LLM_CONTENT_FILTERED, 'The model provider filtered the answer');
  }
  return result;
}
