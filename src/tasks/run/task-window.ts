import type { AgentSpecConfig } from '../../agents/config/agent.schema';
import type { AgentRunner } from '../../invocation/agent-runner';
import { fitConversation } from '../../invocation/history-run';
import { digestOf, summarize, withSummary } from '../../invocation/history-summary';
import type { HistoryWindow } from '../../invocation/history-window';
import { userContextMessage } from '../../invocation/llm-content';
import { emptyUsage, TokenUsage } from '../../llm/llm-client.port';
import type { HistorySummaryRecord, RequestRecord } from '../../state/state.entities';
import { withoutSuperseded } from '../lifecycle/edit';
import { conversationOf, summaryOf } from './task-history';

/**
 * The model input of a task's request, fitted to `spec.agent.history`: the user context (always
 * kept), then the newest whole turns of the replayed history that fit, then the current request.
 */
export function taskWindow(spec: AgentSpecConfig, earlier: RequestRecord[], current: RequestRecord): HistoryWindow {
  // The earlier requests summed up once per task and extended turn by turn (summaryOf). Without an
  // edit nothing is hidden; with one, the requests it did not supersede are summed up afresh (the
  // user context too is looked up among them).
  let summary = summaryOf(earlier, true);
  if (current.edits || summary.edited) summary = summaryOf(withoutSuperseded(earlier, current), false);
  const pinnedHead = userContextMessage(current.userContext ?? summary.userContext) ? 1 : 0;
  return fitConversation(spec, conversationOf(summary, current), pinnedHead);
}

export interface TaskInput {
  window: HistoryWindow;
  /** How many left-out messages a summary stands for (0 without one). */
  summarized: number;
  /** A summary written for this request (to store on it), when the stored one did not cover the left-out turns. */
  written?: HistorySummaryRecord;
  /** The summarizing call's usage. */
  usage: TokenUsage;
}

/**
 * `taskWindow`, and with `strategy: summarize` the left-out turns replaced by a summary. The
 * summary is written once by the model and stored on the request that wrote it; later requests
 * reuse the latest stored one while the same turns are left out, and when more fall out, the model
 * extends it with those turns only.
 */
export async function taskInput(
  runner: Pick<AgentRunner, 'run'>,
  spec: AgentSpecConfig,
  earlier: RequestRecord[],
  current: RequestRecord,
  signal?: AbortSignal,
): Promise<TaskInput> {
  const window = taskWindow(spec, earlier, current);
  if (spec.history?.strategy !== 'summarize' || window.omitted.length === 0) return { window, summarized: 0, usage: emptyUsage() };
  // A resumed request may have written one before its pause.
  const stored = latestSummary([...earlier, current]);
  // A stored summary is a base only for exactly the messages it was written from.
  const base = stored && stored.covers <= window.omitted.length && stored.digest === digestOf(window.omitted.slice(0, stored.covers)) ? stored : undefined;
  if (base && base.covers === window.omitted.length) return { window: withSummary(window, base.text), summarized: base.covers, usage: emptyUsage() };
  const { text, usage } = await summarize(runner, spec, window.omitted.slice(base?.covers ?? 0), base?.text, signal);
  const written: HistorySummaryRecord = { text, covers: window.omitted.length, digest: digestOf(window.omitted) };
  return { window: withSummary(window, text), summarized: written.covers, written, usage };
}

function latestSummary(earlier: RequestRecord[]): HistorySummaryRecord | undefined {
  for (let i = earlier.length - 1; i >= 0; i--) if (earlier[i]!.historySummary) return earlier[i]!.historySummary;
  return undefined;
}
