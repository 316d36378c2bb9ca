import { newUuid } from '../../common/ids/uuid.util';
import { LlmMessage } from '../../llm/llm-client.port';
import type { ToolExecution } from '../../tools/tool-executor';
import { toLlmContent, userContextMessage } from '../../invocation/llm-content';
import { RequestRecord, StoredMessage, ToolCallTrace } from '../../state/state.entities';

/**
 * The model input of a follow-on, rebuilt from the stored requests: the user context, then every
 * earlier completed request's messages in order (user turn, assistant turns with their tool calls,
 * tool results), then the current request's messages. Failed and canceled requests stay in the
 * task record but are not replayed, so a failure never leaves a dangling turn in the model input.
 * (The system prompt is added by the AgentRunner.) `earlier`: the summary (`summaryOf`) of the
 * earlier requests an edit has not superseded (`withoutSuperseded`, lifecycle/edit.ts).
 */
export function conversationOf(earlier: EarlierRequests, current: RequestRecord): LlmMessage[] {
  const ctx = userContextMessage(current.userContext ?? earlier.userContext);
  const { replay, replayLength } = earlier;
  // Indexed loops into an array made at its final size (an array grown by push is copied each time
  // it outgrows its backing store).
  const out = new Array<LlmMessage>((ctx ? 1 : 0) + replayLength + current.messages.length);
  let n = 0;
  if (ctx) out[n++] = ctx;
  for (let i = 0; i < replayLength; i++) out[n++] = replay[i]!;
  for (const m of current.messages) out[n++] = toLlmMessage(m);
  return out;
}

/** What a follow-on needs of a task's earlier requests (`summaryOf`). */
export interface EarlierRequests {
  /** How many requests it sums up: the first `count` of `records`. */
  readonly count: number;
  /** The requests summed up, as given (compared by reference before the summary is reused); may go on past `count`. */
  readonly records: readonly RequestRecord[];
  /** How many messages the completed ones have: the first `replayLength` of `replay`. */
  readonly replayLength: number;
  /** The completed ones' messages, in order (the replayed history); may go on past `replayLength`. */
  readonly replay: readonly LlmMessage[];
  /** Some of them is an edit (then an edit may hide some: lifecycle/edit.ts, withoutSuperseded). */
  readonly edited: boolean;
  /** The latest user context given. */
  readonly userContext: Record<string, string> | undefined;
}

/**
 * The summary of each task's earlier requests, kept for its next follow-on, keyed by the last
 * request it covers. A follow-on's earlier requests are the last one's plus the request that has
 * just completed, so the next summary is this one extended by that request, not a walk over the
 * whole history again (which, with each request's messages looked up, was the part of a turn that
 * grew with the task: issue 27). Kept only when every request it covers is frozen (the in-memory
 * store and the task cache hand out the same frozen records on every read), and reused only when
 * the requests it covers are, one by one, the same objects as the start of the ones given (a
 * pointer comparison each), so a history that changed (an expired task created again, records
 * read afresh) is summed up afresh. One summary per task: extending one drops it, and the next
 * one appends to its arrays (each summary reads only its own first `count` and `replayLength`),
 * so a turn adds its own request and messages, not a copy of the whole history. Bounded by the
 * records' own lifetime (a WeakMap keyed by a stored record).
 */
const summaries = new WeakMap<RequestRecord, EarlierRequests>();
/** How far back from the end a kept summary's last request is looked for (a turn adds one or two). */
const SUMMARY_LOOKBACK = 4;
const NONE: EarlierRequests = Object.freeze({ count: 0, records: [], replayLength: 0, replay: [], edited: false, userContext: undefined });

/** The summary of `earlier` (in `seq` order), from a kept one when one matches; `keep`: keep it for the next turn. */
export function summaryOf(earlier: readonly RequestRecord[], keep: boolean): EarlierRequests {
  const n = earlier.length;
  if (n === 0) return NONE;
  let base: EarlierRequests | undefined;
  for (let k = n - 1; keep && k >= 0 && k >= n - 1 - SUMMARY_LOOKBACK; k--) {
    const kept = summaries.get(earlier[k]!);
    if (kept && kept.count === k + 1 && samePrefix(kept, earlier)) {
      base = kept;
      break;
    }
  }
  if (base && base.count === n) return base;
  let edited = base?.edited ?? false;
  let userContext = base?.userContext;
  // Appended to the base's arrays when nothing went on past it yet (the base is dropped below), else copies.
  const records = (base ? (base.records.length === base.count ? base.records : base.records.slice(0, base.count)) : []) as RequestRecord[];
  const replay = (base ? (base.replay.length === base.replayLength ? base.replay : base.replay.slice(0, base.replayLength)) : []) as LlmMessage[];
  // The kept summary's requests were all frozen; each added one is checked.
  let frozen = true;
  for (let i = base ? base.count : 0; i < n; i++) {
    const r = earlier[i]!;
    records.push(r);
    frozen &&= Object.isFrozen(r);
    if (r.edits) edited = true;
    if (r.userContext !== undefined) userContext = r.userContext;
    // Only completed requests' messages are replayed.
    if (r.status !== 'Completed') continue;
    const messages = replayOf(r);
    for (let j = 0; j < messages.length; j++) replay.push(messages[j]!);
  }
  const summary: EarlierRequests = { count: n, records, replayLength: replay.length, replay, edited, userContext };
  if (keep && frozen) {
    if (base) summaries.delete(base.records[base.count - 1]!);
    summaries.set(earlier[n - 1]!, summary);
  }
  return summary;
}

function samePrefix(kept: EarlierRequests, earlier: readonly RequestRecord[]): boolean {
  for (let i = 0; i < kept.count; i++) if (kept.records[i] !== earlier[i]) return false;
  return true;
}

/**
 * A stored request is immutable once read (the in-memory store hands out the same frozen record on
 * every read), so its model messages are converted once per record object, not on every follow-on:
 * on a long task that conversion was the part of a turn that grew with the history. They are
 * frozen too, so the model client serializes each of them once (openai.params.ts, `chatBodyBytes`).
 */
const replayed = new WeakMap<RequestRecord, readonly LlmMessage[]>();

function replayOf(r: RequestRecord): readonly LlmMessage[] {
  let messages = replayed.get(r);
  if (!messages) {
    messages = r.messages.map(toLlmMessage);
    if (Object.isFrozen(r)) {
      for (const m of messages) Object.freeze(m);
      replayed.set(r, messages);
    }
  }
  return messages;
}

export function toLlmMessage(m: StoredMessage): LlmMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: toLlmContent(m.items) };
    case 'assistant':
      return m.tool_calls?.length ? { role: 'assistant', content: m.content, tool_calls: m.tool_calls } : { role: 'assistant', content: m.content };
    case 'tool':
      return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
  }
}

/**
 * The messages the tool loop appended (each assistant turn that asked for tools, then its tool
 * results), as stored: `toLlmMessage` gives them back unchanged. A tool result is `is_error` when
 * its call did not succeed.
 */
export function storedToolRounds(run: { appended: LlmMessage[]; toolExecutions: ToolExecution[] }, now: string): StoredMessage[] {
  const failed = new Set(run.toolExecutions.filter((e) => e.outcome !== 'ok').map((e) => e.id));
  return run.appended.map((m): StoredMessage => {
    switch (m.role) {
      case 'assistant':
        return { id: newUuid(), role: 'assistant', content: m.content, ...(m.tool_calls?.length ? { tool_calls: m.tool_calls } : {}), created_at: now };
      case 'tool':
        return { id: newUuid(), role: 'tool', tool_call_id: m.tool_call_id, content: m.content, is_error: failed.has(m.tool_call_id), created_at: now };
      default:
        throw new Error(`the tool loop does not append ${m.role} messages`);
    }
  });
}

/** One call of the execution trace (`RequestRecord.toolCalls`). */
export function toolCallTrace(e: ToolExecution): ToolCallTrace {
  const trace: ToolCallTrace = {
    id: e.id,
    name: e.name,
    arguments: e.arguments,
    started_at: e.started_at,
    duration_ms: e.duration_ms,
    outcome: e.outcome,
    result: e.result,
  };
  if (e.extra_data?.length) trace.extra_data = e.extra_data;
  return trace;
}
