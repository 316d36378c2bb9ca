import { newUuid } from '../common/ids/uuid.util';
import type { Principal } from '../auth/principal';
import type { ModelCallTrace } from '../state/state.entities';
import { frozen } from '../state/state-store.util';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { addUsage, emptyUsage, LlmClient, LlmMessage, LlmRequest, LlmResult, LlmToolCall, LlmToolSpec } from '../llm/llm-client.port';
import { ApprovalPolicy, ApprovalReason, approvalForTurn, approvalUnavailableResult, DEFAULT_APPROVAL_POLICY, rejectedResult } from '../tools/governance';
import type { ToolExecution, ToolExecutor } from '../tools/tool-executor';
import type { Tool } from '../tools/tool.port';
import { Toolset, toolSpecs } from '../tools/toolset';
import { isoNow, isoTime } from '../common/time/iso-time';

/** Who the tools act for: the authenticated caller, and their token for tools set to forward it. */
export interface ToolCaller {
  principal: Principal;
  bearerToken?: string;
}

export interface ToolLoopOptions {
  signal?: AbortSignal;
  /** When given, each model turn is streamed and its text deltas are passed here. */
  onDelta?: (text: string) => void;
  /** Required when the agent has tools: their calls run for this caller. */
  caller?: ToolCaller;
  /** A tool call is about to run (the model asked for it). */
  onToolCall?: (call: LlmToolCall) => void;
  /** A tool call finished (ok, error or canceled), with the result the model will see. */
  onToolResult?: (execution: ToolExecution) => void;
  /**
   * Human approval of risky calls (`spec.governance`, else upstream's rule; src/tools/governance.ts,
   * approvalPolicyOf). `canPause`: a turn with a call that needs approval ends the run `paused`
   * (v3); otherwise (v1/v2) such calls do not run and the model gets an error result saying
   * approval is not possible here. Default: the default policy (L1), no pausing: fail closed.
   */
  approvals?: { policy: ApprovalPolicy; canPause: boolean };
  /**
   * Continue a paused run: the conversation ends with the assistant turn that asked for `calls`;
   * the `approved` ones run (with the calls that needed no approval, listed in `approved` too),
   * the others get a "rejected by the user" result, then the loop goes on as usual.
   */
  resume?: { calls: LlmToolCall[]; approved: ReadonlySet<string>; reasons?: Readonly<Record<string, string>>; provided?: Readonly<Record<string, string>> };
  /**
   * Tools the caller runs itself (AG-UI client-side tools), offered to the model after the agent's
   * own (a name the agent has is left out). A turn that calls them, and needs no approval, ends the
   * run `paused` with those calls pending (reason `client_tool`); the caller's results come back as
   * `resume.provided`. In a turn that waits for approval they get an error result instead.
   */
  clientTools?: LlmToolSpec[];
}

/** A run that stopped before a turn whose calls need a human decision. */
export interface PausedTurn {
  /** Every call of the turn, in order (the last message of `appended` is the turn itself). */
  calls: LlmToolCall[];
  /** The calls a human must decide on. */
  pending: LlmToolCall[];
  /** The turn is one plan, approved or rejected as a whole. */
  plan: boolean;
  /** Why each pending call needs approval, by call id. */
  reasons: Record<string, ApprovalReason>;
  /** Each call's declared risk (its tool's), by call id. */
  risks: Record<string, string>;
}

/** The final model turn, with the whole run's usage and what the loop added on the way. */
export interface AgentRunResult extends LlmResult {
  /**
   * The messages added after the conversation, in order: each assistant turn that asked for tools,
   * followed by its tool results. The final answer is not included. Replaying
   * `conversation + appended` gives exactly what the model saw before its final answer.
   */
  appended: LlmMessage[];
  /** Every tool call that ran, in order (the execution trace). */
  toolExecutions: ToolExecution[];
  /** Every model call of the run, in order. */
  modelCalls: ModelCallTrace[];
  /**
   * Set when the run stopped for an approval: `appended` then ends with the assistant turn that
   * asked for the calls (no results yet), and `content` is that turn's text.
   */
  paused?: PausedTurn;
}

export interface PartialRun {
  appended: LlmMessage[];
  toolExecutions: ToolExecution[];
  modelCalls: ModelCallTrace[];
}

const partialRuns = new WeakMap<object, PartialRun>();

/** What a failed run had done before it failed (its tool calls, for the request's trace). */
export function partialRunOf(err: unknown): PartialRun | undefined {
  return err !== null && typeof err === 'object' ? partialRuns.get(err) : undefined;
}

/**
 * The agent loop: a model turn with every tool of the agent; if it asks for tools, run them all
 * (concurrently; results in the order of the calls, each paired with its call id), append the
 * turn and the results, and ask again, until the model answers without tools. More than
 * `maxRounds` tool-asking turns end the run with TOOL_ROUNDS_EXCEEDED; a canceled request aborts
 * running tools and ends with REQUEST_CANCELED. A failing tool never fails the run: the model
 * receives the error as the tool's result.
 */
export async function runToolLoop(
  deps: { client: LlmClient; toolset: Toolset; executor: ToolExecutor },
  request: LlmRequest,
  maxRounds: number,
  options: ToolLoopOptions = {},
): Promise<AgentRunResult> {
  const appended: LlmMessage[] = [];
  const toolExecutions: ToolExecution[] = [];
  const modelCalls: ModelCallTrace[] = [];
  const approvals = options.approvals ?? { policy: DEFAULT_APPROVAL_POLICY, canPause: false };
  try {
    const unavailable: string[] = [];
    const tools: ReadonlyMap<string, Tool> = deps.toolset.isEmpty ? new Map() : await deps.toolset.resolve(unavailable);
    const clientTools = (options.clientTools ?? []).filter((t) => !tools.has(t.name));
    const isClientCall = (c: LlmToolCall) => clientTools.some((t) => t.name === c.name);
    const specs = [...toolSpecs(tools), ...clientTools];
    const provided = options.resume?.provided ?? {};
    // Copied when the loop first appends to it (a tool round): most runs only read it, and it holds
    // the whole history on every follow-on.
    let messages = request.messages;
    const append = (m: LlmMessage) => {
      if (messages === request.messages) messages = [...messages];
      messages.push(m);
      appended.push(m);
    };
    let usage = emptyUsage();
    const runTurn = async (calls: LlmToolCall[], refused: ReadonlyMap<string, NotRun>) => {
      if (!options.caller) throw new DomainError(ErrorCode.INTERNAL, 'tool calls need the caller identity, and none was given');
      const ctx = { principal: options.caller.principal, bearerToken: options.caller.bearerToken, signal: options.signal };
      const hooks = { onStart: options.onToolCall, onDone: options.onToolResult };
      const runnable = calls.filter((c) => !refused.has(c.id) && !isClientCall(c) && !(c.id in provided));
      const ran = new Map((await deps.executor.executeAll(tools, runnable, ctx, hooks)).map((e) => [e.id, e]));
      for (const call of calls) {
        const e = ran.get(call.id) ?? notRun(call, refused.get(call.id) ?? clientResult(call, provided[call.id]));
        if (!ran.has(call.id)) options.onToolResult?.(e);
        toolExecutions.push(e);
        append({ role: 'tool', tool_call_id: e.id, content: e.result });
      }
      if (options.signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
    };
    if (options.resume) {
      const { calls, approved, reasons } = options.resume;
      const rejected = calls.filter((c) => !approved.has(c.id));
      await runTurn(calls, new Map(rejected.map((c) => [c.id, { outcome: 'rejected', result: rejectedResult(c, reasons?.[c.id]) }])));
    }
    for (let round = 0; ; round++) {
      const startedAt = Date.now();
      const result = await modelTurn(
        deps.client,
        { ...request, messages, ...(specs.length ? { tools: specs } : {}), ...(unavailable.length ? { toolsUnavailable: unavailable } : {}) },
        options,
      );
      modelCalls.push(modelCallTrace(request.model, startedAt, result));
      usage = addUsage(usage, result.usage);
      if (!result.toolCalls.length) return { ...result, usage, appended, toolExecutions, modelCalls };
      if (round >= maxRounds) {
        throw new DomainError(
          ErrorCode.TOOL_ROUNDS_EXCEEDED,
          `The model asked for tools ${round + 1} times without giving an answer; spec.agent.max_tool_rounds allows ${maxRounds}. The request was stopped.`,
        );
      }
      const calls = withUniqueIds(result.toolCalls);
      const turn: LlmMessage = { role: 'assistant', content: result.content || null, tool_calls: calls };
      append(turn);
      const clientCalls = calls.filter(isClientCall);
      const verdict = approvalForTurn(approvals.policy, tools, clientCalls.length ? calls.filter((c) => !isClientCall(c)) : calls);
      const risks = () => Object.fromEntries(calls.map((c) => [c.id, isClientCall(c) ? 'client' : (tools.get(c.name)?.risk ?? 'write_high_risk')]));
      if (verdict.pending.length && approvals.canPause) {
        return { ...result, usage, appended, toolExecutions, modelCalls, paused: { calls, ...verdict, risks: risks() } };
      }
      if (clientCalls.length && approvals.canPause) {
        const reasons = Object.fromEntries(clientCalls.map((c) => [c.id, 'client_tool' as const]));
        return { ...result, usage, appended, toolExecutions, modelCalls, paused: { calls, pending: clientCalls, plan: false, reasons, risks: risks() } };
      }
      await runTurn(calls, new Map(verdict.pending.map((c) => [c.id, { outcome: 'error', result: approvalUnavailableResult(c) }])));
    }
  } catch (err) {
    if (err !== null && typeof err === 'object') partialRuns.set(err, { appended, toolExecutions, modelCalls });
    throw err;
  }
}

function modelCallTrace(model: string, startedAt: number, result: LlmResult): ModelCallTrace {
  const u = result.usage;
  // Made frozen, as the request record keeps it (state-store.util `frozen`).
  return frozen({
    model,
    started_at: isoTime(startedAt),
    duration_ms: Date.now() - startedAt,
    usage: frozen({ prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens }),
    ...(result.finishReason ? { finish_reason: result.finishReason } : {}),
  });
}

/** The trace of a call that did not run here (rejected, refused for want of approval, or a client-side tool's). */
interface NotRun {
  outcome: 'rejected' | 'error' | 'ok';
  result: string;
}

/** A client-side tool's call: the result its caller gave, or an error when none came back. */
function clientResult(call: LlmToolCall, result: string | undefined): NotRun {
  if (result !== undefined) return { outcome: 'ok', result };
  return { outcome: 'error', result: `Error: ${call.name} is a client-side tool and its caller gave no result for this call; it did not run.` };
}

function notRun(call: LlmToolCall, why: NotRun): ToolExecution {
  return { id: call.id, name: call.name, arguments: call.arguments, started_at: isoNow(), duration_ms: 0, ...why, attempts: 0 };
}

async function modelTurn(client: LlmClient, request: LlmRequest, options: ToolLoopOptions): Promise<LlmResult> {
  if (!options.onDelta) return client.complete(request, options.signal);
  let result: LlmResult | undefined;
  for await (const ev of client.stream(request, options.signal)) {
    if (ev.type === 'delta') options.onDelta(ev.text);
    else result = ev.result;
  }
  if (!result) throw new Error('model stream ended without a result');
  return result;
}

/** Results are paired with calls by id: a missing or repeated id gets a fresh one. */
function withUniqueIds(calls: LlmToolCall[]): LlmToolCall[] {
  const seen = new Set<string>();
  return calls.map((c) => {
    const id = c.id && !seen.has(c.id) ? c.id : `call_${newUuid().replace(/-/g, '')}`;
    seen.add(id);
    return { id, name: c.name, arguments: c.arguments };
  });
}
