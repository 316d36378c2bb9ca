import { Inject, Injectable, Optional } from '@nestjs/common';
import { newUuid } from '../common/ids/uuid.util';
import { AgentDefinition } from '../agents/config/agent-definition';
import { TELEMETRY } from '../app.tokens';
import { LogContext } from '../common/logging/log-context';
import { ShutdownStateService } from '../common/shutdown/shutdown-state.service';
import type { StatelessInput } from './stateless-input';
import { addUsage, emptyUsage, LlmMessage, TokenUsage } from '../llm/llm-client.port';
import { RateLimiter } from '../rate-limit/rate-limiter.service';
import { Telemetry } from '../telemetry/telemetry';
import { approvalPolicyOf } from '../tools/governance';
import { AgentSpecConfig } from '../agents/config/agent.schema';
import type { OutputType } from '../agents/custom-types/data-type';
import { AgentRunner, RunOptions } from './agent-runner';
import { runForOutputType, StructuredRun } from './structured-output';
import { ExtraData, extraDataOf, InvokeResponse, StatelessStreamEvent } from './invoke-response';
import type { ToolExecution } from '../tools/tool-executor';
import { fitConversation } from './history-run';
import { historyToMessages, userContextMessage } from './llm-content';
import { SequentialPlan } from './sequential/sequential-plan';
import type { ToolCaller } from './tool-loop';

export interface InvokeOptions {
  signal?: AbortSignal;
  /** Who the agent's tools act for (the authenticated caller, and their token for tools that forward it). */
  caller?: ToolCaller;
  /** Streaming: receives events in order; the final response is also returned. */
  emit?: (e: StatelessStreamEvent) => void;
}

/**
 * Stateless invocation (v1 and v2alpha1): the whole conversation comes with the request, nothing is
 * stored. Chat/Agent run one agent; Sequential runs its tasks in `task_no` order, each seeing the
 * earlier outputs as `{{_task_name}}`.
 */
@Injectable()
export class StatelessInvokerService {
  private readonly plans = new WeakMap<AgentDefinition, SequentialPlan>();

  constructor(
    private readonly runner: AgentRunner,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    private readonly limiter: RateLimiter,
    @Optional() private readonly shutdown?: ShutdownStateService,
  ) {}

  async invoke(agent: AgentDefinition, input: StatelessInput, given: InvokeOptions = {}): Promise<InvokeResponse> {
    // A call still running when the shutdown grace ends is aborted, and fails SHUTTING_DOWN (503).
    const graceOver = this.shutdown?.graceOver;
    const options = graceOver ? { ...given, signal: given.signal ? AbortSignal.any([given.signal, graceOver]) : graceOver } : given;
    const sessionId = input.session_id ?? newUuid().replace(/-/g, '');
    const requestId = newUuid().replace(/-/g, '');
    // The lines (and the SERVER span) of this call name the API's request and session (v1/v2 have no task).
    LogContext.active()?.set({ request_id: requestId, session_id: sessionId });
    const attributes = {
      'ta.agent.name': agent.name,
      'ta.agent.version': agent.version,
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.request.model': agent.agent.model,
      'ta.request_id': requestId,
    };
    const started = performance.now();
    return this.telemetry.inSpan(`invoke_agent ${agent.source}`, attributes, async (span) => {
      let outcome = 'error';
      try {
        const response = agent.sequential
          ? await this.runSequential(agent, input, sessionId, requestId, options)
          : await this.runChat(agent, input, sessionId, requestId, options);
        const u = response.token_usage;
        span.setAttributes({
          'gen_ai.usage.input_tokens': u.prompt_tokens,
          'gen_ai.usage.output_tokens': u.completion_tokens,
          'ta.usage.total_tokens': u.total_tokens,
        });
        outcome = 'ok';
        // The tokens of the whole invocation (every task of a Sequential agent) go to the caller's window.
        if (options.caller) await this.limiter.charge(agent, options.caller.principal, u);
        options.emit?.({ event: 'final-response', data: response });
        return response;
      } catch (err) {
        throw graceOver?.aborted && !given.signal?.aborted ? graceOver.reason : err;
      } finally {
        const metricAttrs = { 'ta.agent.name': agent.name, 'ta.agent.version': agent.version, outcome };
        this.telemetry.invocations.add(1, metricAttrs);
        this.telemetry.invocationDuration.record((performance.now() - started) / 1000, metricAttrs);
      }
    });
  }

  private async runChat(agent: AgentDefinition, input: StatelessInput, sessionId: string, requestId: string, options: InvokeOptions): Promise<InvokeResponse> {
    const conversation: LlmMessage[] = [];
    const ctx = userContextMessage(input.user_context);
    if (ctx) conversation.push(ctx);
    conversation.push(...historyToMessages(input.chat_history ?? []));
    // spec.agent.history: the newest whole turns that fit, the user context always kept.
    const fitted = fitConversation(agent.agent, conversation, ctx ? 1 : 0).messages;
    const onDelta = partialEmitter(agent, sessionId, requestId, options);
    const calls: ToolExecution[] = [];
    const result = await this.run(agent.outputSchema, agent.agent, fitted, {
      signal: options.signal,
      onDelta,
      caller: options.caller,
      onToolResult: (e) => void calls.push(e),
      approvals: { policy: approvalPolicyOf(agent), canPause: false },
    });
    this.telemetry.recordTokens(result.usage, { 'gen_ai.request.model': agent.agent.model, 'ta.agent.name': agent.name });
    return this.response(agent, sessionId, requestId, result.content, result.usage, result.value, extraDataOf(calls));
  }

  private async runSequential(
    agent: AgentDefinition,
    input: StatelessInput,
    sessionId: string,
    requestId: string,
    options: InvokeOptions,
  ): Promise<InvokeResponse> {
    let plan = this.plans.get(agent);
    if (!plan) {
      plan = SequentialPlan.compile(agent);
      this.plans.set(agent, plan);
    }
    // A custom input type's fields are the template's (upstream: the input model's fields).
    const scope: Record<string, unknown> = input.fields
      ? { ...input.fields }
      : { chat_history: input.chat_history ?? [], user_context: input.user_context ?? {}, session_id: input.session_id };
    let usage = emptyUsage();
    let output = '';
    let outputValue: unknown = null;
    // As upstream (Task.invoke), the tasks share one history: each adds its instructions and its answer.
    const history = historyToMessages(input.chat_history ?? []);
    // The tools of every task add to the one answer's extra_data, as upstream's one collector per request.
    const calls: ToolExecution[] = [];
    for (const [i, step] of plan.steps.entries()) {
      const last = i === plan.steps.length - 1;
      const instructions: LlmMessage = { role: 'user', content: step.instructions.render(scope) };
      const conversation: LlmMessage[] = [...history, instructions];
      // Only the last task's text is the answer: earlier ones arrive whole as intermediate-task-response.
      const onDelta = last ? partialEmitter(agent, sessionId, requestId, options) : undefined;
      // As upstream, only the last task answers in the output type.
      const result = await this.run(last ? agent.outputSchema : undefined, step.agent, conversation, {
        signal: options.signal,
        onDelta,
        caller: options.caller,
        onToolResult: (e) => void calls.push(e),
        approvals: { policy: approvalPolicyOf(agent), canPause: false },
      });
      this.telemetry.recordTokens(result.usage, { 'gen_ai.request.model': step.agent.model, 'ta.agent.name': agent.name });
      usage = addUsage(usage, result.usage);
      output = result.content;
      outputValue = result.value;
      history.push(instructions, { role: 'assistant', content: result.content });
      scope[`_${step.task.name}`] = result.content;
      if (!last) {
        options.emit?.({
          event: 'intermediate-task-response',
          data: {
            // As upstream: the count of tasks done so far (1, 2, ...), not the configured task_no.
            task_no: i + 1,
            task_name: step.task.name,
            response: this.response(agent, sessionId, requestId, result.content, result.usage),
          },
        });
      }
    }
    return this.response(agent, sessionId, requestId, output, usage, outputValue, extraDataOf(calls));
  }

  /**
   * One agent run. With an output type, the model is asked for structured output and the answer
   * is validated (one repair turn; src/invocation/structured-output.ts); `value` is the parsed answer.
   */
  private async run(
    output: OutputType | undefined,
    spec: AgentSpecConfig,
    conversation: readonly LlmMessage[],
    options: RunOptions,
  ): Promise<{ content: string; usage: TokenUsage; value: unknown }> {
    if (!output) {
      const r = await this.runner.run(spec, conversation, options);
      return { content: r.content, usage: r.usage, value: null };
    }
    const run: StructuredRun = (conv, o) =>
      this.runner.run(spec, conv, { ...options, responseFormat: o.responseFormat, onDelta: o.stream ? options.onDelta : undefined });
    return runForOutputType(run, conversation, output, !!options.onDelta);
  }

  private response(
    agent: AgentDefinition,
    sessionId: string,
    requestId: string,
    output: string,
    usage: TokenUsage,
    outputPydantic: unknown = null,
    extraData: ExtraData | null = null,
  ): InvokeResponse {
    return {
      session_id: sessionId,
      source: agent.source,
      request_id: requestId,
      token_usage: usage,
      extra_data: extraData,
      output_raw: output,
      output_pydantic: outputPydantic,
    };
  }
}

/** Streams model text as upstream's `partial-response` events (nothing when not streaming). */
function partialEmitter(agent: AgentDefinition, sessionId: string, requestId: string, options: InvokeOptions): ((text: string) => void) | undefined {
  const emit = options.emit;
  if (!emit) return undefined;
  return (text) =>
    emit({
      event: 'partial-response',
      data: { session_id: sessionId, source: agent.source, request_id: requestId, output_partial: text },
    });
}
