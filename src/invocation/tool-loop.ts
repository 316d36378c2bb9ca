import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { addUsage, emptyUsage, LlmClient, LlmMessage, LlmRequest, LlmResult, LlmToolCall } from '../llm/llm-client.port';
import type { ToolExecution, ToolExecutor } from '../tools/tool-executor';
import { Toolset, toolSpecs } from '../tools/toolset';

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
}

export interface PartialRun {
  appended: LlmMessage[];
  toolExecutions: ToolExecution[];
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
  try {
    const tools = deps.toolset.isEmpty ? new Map() : await deps.toolset.resolve();
    const specs = toolSpecs(tools);
    const messages = [...request.messages];
    let usage = emptyUsage();
    for (let round = 0; ; round++) {
      const result = await modelTurn(deps.client, { ...request, messages, ...(specs.length ? { tools: specs } : {}) }, options);
      usage = addUsage(usage, result.usage);
      if (!result.toolCalls.length) return { ...result, usage, appended, toolExecutions };
      if (round >= maxRounds) {
        throw new DomainError(
          ErrorCode.TOOL_ROUNDS_EXCEEDED,
          `The model asked for tools ${round + 1} times without giving an answer; spec.agent.max_tool_rounds allows ${maxRounds}. The request was stopped.`,
        );
      }
      if (!options.caller) throw new DomainError(ErrorCode.INTERNAL, 'tool calls need the caller identity, and none was given');
      const calls = withUniqueIds(result.toolCalls);
      const turn: LlmMessage = { role: 'assistant', content: result.content || null, tool_calls: calls };
      messages.push(turn);
      appended.push(turn);
      const done = await deps.executor.executeAll(
        tools,
        calls,
        { principal: options.caller.principal, bearerToken: options.caller.bearerToken, signal: options.signal },
        { onStart: options.onToolCall, onDone: options.onToolResult },
      );
      for (const e of done) {
        toolExecutions.push(e);
        const msg: LlmMessage = { role: 'tool', tool_call_id: e.id, content: e.result };
        messages.push(msg);
        appended.push(msg);
      }
      if (options.signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The request was canceled');
    }
  } catch (err) {
    if (err !== null && typeof err === 'object') partialRuns.set(err, { appended, toolExecutions });
    throw err;
  }
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
    const id = c.id && !seen.has(c.id) ? c.id : `call_${randomUUID().replace(/-/g, '')}`;
    seen.add(id);
    return { id, name: c.name, arguments: c.arguments };
  });
}
