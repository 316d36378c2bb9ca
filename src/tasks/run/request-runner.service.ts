import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { context } from '@opentelemetry/api';
import { newUuid } from '../../common/ids/uuid.util';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { LOGGER, TELEMETRY } from '../../app.tokens';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { problemOf } from '../../common/errors/problem-of';
import { isShutdownError, ShutdownStateService } from '../../common/shutdown/shutdown-state.service';
import { callerFields, LogContext } from '../../common/logging/log-context';
import { AgentRunner } from '../../invocation/agent-runner';
import { modelInputOf, runFittingHistory } from '../../invocation/history-run';
import { AgentRunResult, partialRunOf } from '../../invocation/tool-loop';
import { addUsage, type LlmToolCall, type LlmToolSpec } from '../../llm/llm-client.port';
import { llmFailureLogFields } from '../../llm/llm-failure-log';
import { PendingApprovals, RequestRecord } from '../../state/state.entities';
import { frozen } from '../../state/state-store.util';
import { RateLimiter } from '../../rate-limit/rate-limiter.service';
import { Telemetry } from '../../telemetry/telemetry';
import { approvalPolicyOf } from '../../tools/governance';
import type { ToolExecution } from '../../tools/tool-executor';
import { HeldLease } from './held-lease';
import { RunNow } from '../lifecycle/admit';
import type { ResumePlan } from '../lifecycle/decide';
import { idsOf, responseOf } from '../views/request-response';
import { RunningRequestsService } from './running-requests.service';
import { StateResponse } from '../views/state-response';
import { StreamEventWriterService } from '../events/stream-event-writer.service';
import { eventSize, RequestEventLog, TaskEventLogService } from '../events/task-event-log.service';
import { storedToolRounds, toolCallTrace } from './task-history';
import { taskInput } from './task-window';
import { TaskWriterService } from '../writer/task-writer.service';
import { isoNow, isoTime } from '../../common/time/iso-time';

export type Emit = (event: string, data: Record<string, unknown>) => void;

export interface RunOptions {
  /** Receives each event of the run (its stream records them). */
  emit?: Emit;
  /** Cancels the run (explicit cancellation; a disconnected stream client does not cancel). */
  signal?: AbortSignal;
  /** The caller's validated bearer token, for tools configured to forward it. Never stored. */
  bearerToken?: string;
  /** Continue a paused request with the decided calls. */
  resume?: ResumePlan;
  /** Tools the caller runs itself (AG-UI client-side tools): src/invocation/tool-loop.ts. */
  clientTools?: LlmToolSpec[];
}

/**
 * Runs a request that holds its task's lease: the agent loop over the task's conversation, the
 * lease renewed meanwhile, then the outcome (Completed, Paused, Failed, Canceled) in one final
 * write that releases the lease or hands it to the waiting follow-on, which then runs here in the
 * background. Every run is registered so a local cancel aborts it at once; a cancel relayed
 * through the store aborts it on the next renewal.
 */
@Injectable()
export class RequestRunnerService implements OnModuleInit, OnModuleDestroy {
  /** The controllers of the runs in progress here: the end of the shutdown grace aborts them all. */
  private readonly live = new Set<AbortController>();
  /** One listener on the grace for all runs, where each run added and removed its own (an EventTarget's listeners cost). */
  private readonly graceEnded = () => {
    for (const controller of this.live) controller.abort(this.shutdown?.graceOver.reason);
  };

  constructor(
    private readonly writer: TaskWriterService,
    private readonly agentRunner: AgentRunner,
    private readonly running: RunningRequestsService,
    private readonly events: TaskEventLogService,
    private readonly streamLog: StreamEventWriterService,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly limiter: RateLimiter,
    @Optional() private readonly shutdown?: ShutdownStateService,
  ) {}

  onModuleInit(): void {
    this.shutdown?.graceOver.addEventListener('abort', this.graceEnded, { once: true });
  }

  onModuleDestroy(): void {
    this.shutdown?.graceOver.removeEventListener('abort', this.graceEnded);
  }

  /**
   * While the replica drains, a request that ends leaves the follow-on waiting behind it in the
   * store with the lease free (another replica, or this one restarted, runs it) rather than
   * starting it here.
   */
  private get handsOver(): boolean {
    return !this.shutdown?.draining;
  }

  run(agent: AgentDefinition, run: RunNow, options: RunOptions = {}): Promise<StateResponse> {
    const request = run.request;
    // One controller per request: the caller's signal, a local cancel, a cancel relayed through
    // the task by another replica, or the lease lost all abort the same model call and tools.
    const controller = new AbortController();
    const forward = () => controller.abort(options.signal?.reason);
    if (options.signal?.aborted) forward();
    else options.signal?.addEventListener('abort', forward, { once: true });
    // A cancel relayed through the task, or the lease lost, aborts it from the lease's side.
    const lease = new HeldLease(this.writer, { tenantId: request.tenantId, taskId: request.taskId }, request.requestId, this.logger, controller);
    // The end of the shutdown grace aborts it too (graceEnded); the drain waits until its outcome is stored.
    const graceOver = this.shutdown?.graceOver;
    if (graceOver?.aborted) controller.abort(graceOver.reason);
    else this.live.add(controller);
    const release = this.shutdown?.enter('run');
    const done = this.execute(agent, run, lease, { ...options, signal: controller.signal });
    this.running.register(request.requestId, controller, done);
    return done.finally(() => {
      options.signal?.removeEventListener('abort', forward);
      this.live.delete(controller);
      release?.();
    });
  }

  /**
   * Records the events of `work` in the request's event log, ending with `final-response` or an
   * `error` frame (the problem details the global filter would answer), and closes the log: the
   * one producer side of every v3 stream. Returns the log for a stream to follow.
   */
  streamed(
    agent: AgentDefinition,
    request: Pick<RequestRecord, 'tenantId' | 'taskId' | 'seq' | 'sessionId' | 'requestId'>,
    startAt: number,
    instance: string,
    work: (emit: Emit) => Promise<StateResponse>,
  ): RequestEventLog {
    const log = this.events.open(request.tenantId, request.taskId, request.seq, startAt);
    const stored = this.streamLog.open(request.tenantId, request.taskId, request.seq, request.requestId);
    const emit: Emit = (event, data) => stored.add(this.events.append(log, event, data));
    // The last event reaches the store before the client: a resume the client sends next, on any
    // replica, must find every id this stream used (its ids continue after them).
    const end = async (event: string, data: Record<string, unknown>) => {
      // Serialized once, for the store's log, this process's log and the stream (the largest event).
      const json = JSON.stringify(data);
      stored.add({ id: `${request.seq}-${log.next}`, n: log.next, event, data, size: eventSize(event, json) });
      await stored.flush();
      this.events.append(log, event, data, json);
    };
    void work(emit)
      .then((response) => end('final-response', { ...response }))
      .catch((err: unknown) => {
        const problem = problemOf(err, instance, this.logger, { task_id: request.taskId });
        // The global filter never sees a streamed request's error: count a store failure here.
        if (problem.code === ErrorCode.STATE_STORE_UNAVAILABLE || problem.code === ErrorCode.STATE_CORRUPT) this.telemetry.recordStoreError(problem.code);
        return end('error', { ...problem, ...idsOf(request) });
      })
      .finally(() => this.events.close(log));
    return log;
  }

  /** Runs a request nobody waits on here (handed over, or taken over from a dead holder); its stream log is kept for waiters. */
  runInBackground(agent: AgentDefinition, run: RunNow): void {
    // Its lines name this request, not the HTTP request (or earlier run) that happened to hand it over.
    const log = new LogContext({ agent: agent.source, ...idsOf(run.request), ...callerFields(run.request) });
    context.with(log.in(context.active()), () => this.streamed(agent, run.request, 0, agent.prefix, (emit) => this.run(agent, run, { emit })));
  }

  private execute(agent: AgentDefinition, run: RunNow, lease: HeldLease, options: RunOptions): Promise<StateResponse> {
    const { request, earlier } = run;
    const ids = idsOf(request);
    const oidHash = LogContext.active()?.fields.oid_hash;
    const span = {
      'ta.agent.name': agent.name,
      'ta.agent.version': agent.version,
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.request.model': agent.agent.model,
      'ta.task_id': ids.task_id,
      'ta.request_id': ids.request_id,
      'ta.session_id': ids.session_id,
      'ta.tid': request.tenantId,
      ...(oidHash ? { 'ta.oid_hash': oidHash } : {}),
    };
    const started = performance.now();
    const invoked = (outcome: string) => {
      const attrs = { 'ta.agent.name': agent.name, 'ta.agent.version': agent.version, outcome };
      this.telemetry.invocations.add(1, attrs);
      this.telemetry.invocationDuration.record((performance.now() - started) / 1000, attrs);
    };
    return this.telemetry
      .inSpan(`invoke_agent ${agent.source}`, span, async (s) => {
        lease.start();
        let final: RequestRecord;
        try {
          const emit = options.emit;
          const input = await taskInput(this.agentRunner, agent.agent, earlier, request, options.signal);
          const { result, window } = await runFittingHistory(this.agentRunner, agent.agent, input.window, {
            signal: options.signal,
            onDelta: emit ? (text) => emit('partial-response', { ...ids, output_partial: text, source: agent.source }) : undefined,
            caller: { principal: { tenantId: request.tenantId, ownerId: request.ownerId }, bearerToken: options.bearerToken },
            ...toolEvents(ids, emit),
            approvals: { policy: approvalPolicyOf(agent), canPause: true },
            resume: options.resume && {
              calls: options.resume.calls,
              approved: new Set(options.resume.approved),
              reasons: options.resume.reasons,
              provided: options.resume.provided,
            },
            clientTools: options.clientTools,
          });
          final = {
            ...outcomeRecord(agent, request, { ...result, usage: addUsage(input.usage, result.usage) }, this.writer.now()),
            modelInput: frozen(modelInputOf(agent.agent, window, input.summarized)),
            ...(input.written ? { historySummary: input.written } : {}),
          };
          s.setAttributes({ 'gen_ai.usage.input_tokens': result.usage.prompt_tokens, 'gen_ai.usage.output_tokens': result.usage.completion_tokens });
          this.telemetry.recordTokens(result.usage, { 'gen_ai.request.model': agent.agent.model, 'ta.agent.name': agent.name });
          await this.limiter.charge(agent, { tenantId: request.tenantId, ownerId: request.ownerId }, addUsage(input.usage, result.usage));
        } catch (caught) {
          lease.stop();
          // A run aborted by the end of the shutdown grace fails as `shutdown`, not as a cancel.
          const err = isShutdownError(options.signal?.reason) ? options.signal.reason : caught;
          if (err instanceof DomainError && err.code === ErrorCode.LEASE_LOST) throw err;
          const llmFailure = llmFailureLogFields(err);
          // As the stateless routes log it; the log context names the agent, task and request.
          if (llmFailure) this.logger.warn(llmFailure, 'model provider call failed');
          await this.recordFailure(agent, request, earlier, lease, err);
          if (err instanceof DomainError && err.code === ErrorCode.REQUEST_CANCELED) {
            options.emit?.('cancelled', { ...ids, reason: 'canceled' });
            return responseOf(agent, { ...request, status: 'Canceled', reason: 'canceled' });
          }
          // The problem answered names the Failed request, so a client can quote it (or read it back).
          // A shutdown also names the reason the request is stored with.
          throw err instanceof DomainError ? err.withExtensions(isShutdownError(err) ? { ...ids, reason: 'shutdown' } : ids) : err;
        }
        // The stored record: Canceled instead when a cancel was asked through the task meanwhile (lifecycle `finish`).
        const { next, final: stored } = await lease.finish(final, this.handsOver);
        if (next) this.runInBackground(agent, { request: next, earlier: [...earlier, stored] });
        const response = responseOf(agent, stored);
        if (response.status === 'Paused') options.emit?.('approval-required', { ...response.content });
        if (response.status === 'Canceled') options.emit?.('cancelled', { ...ids, reason: 'canceled' });
        return response;
      })
      .then(
        (response) => {
          invoked(response.status === 'Completed' ? 'ok' : response.status.toLowerCase());
          return response;
        },
        (err: unknown) => {
          invoked('error');
          throw err;
        },
      );
  }

  /**
   * Stores the request as Failed (or Canceled); the next follow-on works. A lost lease stores nothing.
   * A follow-on handed the lease runs on the task's history (`earlier`, and this request, which is not
   * replayed since it did not complete), as after a completed request.
   */
  private async recordFailure(agent: AgentDefinition, request: RequestRecord, earlier: RequestRecord[], lease: HeldLease, err: unknown): Promise<void> {
    const canceled = err instanceof DomainError && err.code === ErrorCode.REQUEST_CANCELED;
    const reason = canceled ? 'canceled' : isShutdownError(err) ? 'shutdown' : 'failed';
    const now = isoNow();
    // What its tools did stays on the request (trace and messages); a failed request is not replayed.
    const partial = partialRunOf(err);
    const done = partial?.toolExecutions.length
      ? { messages: [...request.messages, ...storedToolRounds(partial, now)], toolCalls: [...request.toolCalls, ...partial.toolExecutions.map(toolCallTrace)] }
      : {};
    const modelCalls = partial?.modelCalls.length ? { modelCalls: [...(request.modelCalls ?? []), ...partial.modelCalls] } : {};
    const error = err instanceof DomainError ? { code: err.code, message: err.message } : { code: ErrorCode.INTERNAL, message: 'Internal error' };
    const record: RequestRecord = { ...request, ...done, ...modelCalls, status: canceled ? 'Canceled' : 'Failed', reason, error, updatedAt: now };
    try {
      const { next } = await lease.finish(record, this.handsOver);
      if (next) this.runInBackground(agent, { request: next, earlier: [...earlier, record] });
    } catch (writeErr) {
      // The lease will lapse and the next follow-on closes this request as abandoned.
      this.logger.error({ err: writeErr, task_id: request.taskId, request_id: request.requestId }, 'could not record the failed request');
    }
  }
}

/** The request's record after its agent run: Paused with the turn that waits, or Completed with the answer. */
function outcomeRecord(agent: AgentDefinition, request: RequestRecord, result: AgentRunResult, nowMs: number): RequestRecord {
  const now = isoTime(nowMs);
  // A resumed request keeps what it did before its pause (trace and usage).
  const toolCalls = [...request.toolCalls, ...result.toolExecutions.map(toolCallTrace)];
  const tokenUsage = frozen(addUsage(request.tokenUsage, result.usage));
  // The traces are made frozen (tool-loop.ts), as stored ones are: the array needs no copy either.
  const modelCalls = frozen([...(request.modelCalls ?? []), ...result.modelCalls]);
  // The tool rounds (up to the turn that waits, when paused): a follow-on replays what the model saw.
  const rounds = storedToolRounds(result, now);
  if (result.paused) {
    const p = result.paused;
    const ttl = agent.governance.approval_ttl_seconds;
    const pendingApprovals: PendingApprovals = {
      pauseId: newUuid(),
      calls: p.calls.map((c) => ({
        id: c.id,
        name: c.name,
        arguments: c.arguments,
        risk: p.risks[c.id],
        ...(p.reasons[c.id] ? { approvalReason: p.reasons[c.id] } : {}),
      })),
      pending: p.pending.map((c) => c.id),
      plan: p.plan,
      requestedAt: now,
      // Without spec.governance no autonomy level applies (upstream's rule: requires_hitl only).
      ...(agent.governed ? { autonomyLevel: agent.governance.autonomy_level } : {}),
      ...(ttl ? { expiresAt: isoTime(nowMs + ttl * 1000) } : {}),
    };
    const pauses = [...(request.pauses ?? []), pendingApprovals];
    return {
      ...request,
      status: 'Paused',
      messages: [...request.messages, ...rounds],
      toolCalls,
      modelCalls,
      tokenUsage,
      pendingApprovals,
      pauses,
      updatedAt: now,
    };
  }
  return {
    ...request,
    status: 'Completed',
    messages: [...request.messages, ...rounds, frozen({ id: newUuid(), role: 'assistant', content: result.content, created_at: now })],
    toolCalls,
    modelCalls,
    output: result.content,
    tokenUsage,
    updatedAt: now,
  };
}

/** Streaming: `tool-call` when a call starts, `tool-result` when it ends, with the request's ids. */
function toolEvents(ids: ReturnType<typeof idsOf>, emit: Emit | undefined) {
  if (!emit) return {};
  return {
    onToolCall: (c: LlmToolCall) => emit('tool-call', { ...ids, tool_call_id: c.id, name: c.name, arguments: c.arguments }),
    onToolResult: (e: ToolExecution) =>
      emit('tool-result', { ...ids, tool_call_id: e.id, name: e.name, outcome: e.outcome, result: e.result, duration_ms: e.duration_ms }),
  };
}
