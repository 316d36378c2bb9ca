import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AgentDefinition } from '../agents/config/agent-definition';
import { ENV_CONFIG, LOGGER, TELEMETRY } from '../app.tokens';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import type { EnvConfig } from '../config/env.config';
import { AgentRunner } from '../invocation/agent-runner';
import type { RunOptions } from '../invocation/agent-runner';
import { partialRunOf } from '../invocation/tool-loop';
import { addUsage, type LlmToolCall } from '../llm/llm-client.port';
import { StateStore } from '../state/state-store';
import { ApprovalDecision, RequestRecord, TaskRecord } from '../state/state.entities';
import { hitlResponse, pendingApprovalsOf, ResumeDecision, takeDecision } from './approvals';
import { VersionConflictError } from '../state/state.errors';
import { Telemetry } from '../telemetry/telemetry';
import { expiryFrom, RunningTask, TaskTiming } from './running-task';
import { StateResponse } from './state-response';
import { buildTaskConversation, storedToolRounds, toolCallTrace } from './task-history';
import type { ToolExecution } from '../tools/tool-executor';
import { leaseActive } from './task-lease';
import { awaitRequestOutcome } from './request-outcome';
import type { UserMessage } from './user-message';
import { newRequestRecord, newTaskRecord } from './task-records';
import { RunningRequests } from './running-requests';

/** How often a follow-on re-reads and retries after losing a compare-and-set to a non-running write. */
const MAX_BEGIN_ATTEMPTS = 4;

export interface StartedRequest {
  ids: { task_id: string; session_id: string; request_id: string };
  /** The task was busy and the agent enqueues (`on_busy: enqueue`): `run` waits for its turn and outcome. */
  queued: boolean;
  /** The request's position in its task (the first part of its stream event ids). */
  seq: number;
  run(options?: StatefulInvokeOptions): Promise<StateResponse>;
}

export interface StatefulInvokeOptions {
  /** Streaming: receives each event (name + data); ids are assigned by the caller's stream. */
  emit?: (event: string, data: Record<string, unknown>) => void;
  /** Cancels the model call (explicit cancellation; a disconnected SSE client does not cancel). */
  signal?: AbortSignal;
  /** The caller's validated bearer token, for tools configured to forward it. Never stored. */
  bearerToken?: string;
}

/**
 * The stateful (tealagents/v1alpha1) invocation: creates or continues a task, holds its lease while
 * the model runs, and persists the outcome. Every write is a compare-and-set on the task version,
 * so concurrent follow-ons on one task (from any number of processes) either run whole or get 409,
 * and the stored history is exactly the successful ones, in order.
 */
@Injectable()
export class StatefulInvoker {
  private readonly timing: TaskTiming;

  constructor(
    private readonly store: StateStore,
    private readonly runner: AgentRunner,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly runningRequests: RunningRequests,
  ) {
    this.timing = { leaseMs: env.state.leaseMs, ttlSeconds: env.state.taskTtlSeconds };
  }

  async invoke(agent: AgentDefinition, principal: Principal, msg: UserMessage, options: StatefulInvokeOptions = {}): Promise<StateResponse> {
    return (await this.start(agent, principal, msg)).run(options);
  }

  /**
   * Phase one: validates ownership and takes the task's lease (404/401/409 happen here, before a
   * stream is opened). Phase two, `run`, calls the model and persists the outcome.
   */
  async start(agent: AgentDefinition, principal: Principal, msg: UserMessage): Promise<StartedRequest> {
    const begun = await this.begin(agent, principal, msg);
    if ('queued' in begun) {
      const q = begun.queued;
      const ids = { task_id: q.taskId, session_id: q.sessionId, request_id: q.requestId };
      return {
        ids,
        seq: q.seq,
        queued: true,
        run: (options = {}) => awaitRequestOutcome(this.store, agent, principal.tenantId, ids, options.emit, options.signal),
      };
    }
    const { running, earlier } = begun;
    const ids = { task_id: running.task.taskId, session_id: running.task.sessionId, request_id: running.request.requestId };
    return {
      ids,
      seq: running.request.seq,
      queued: false,
      run: (options = {}) => this.launch(agent, running, earlier, ids, options),
    };
  }

  /**
   * Decides a paused request (approve/reject its pending tool calls; src/tasks/approvals.ts) and,
   * like `start`, returns it ready to run: the decided calls run (or get the rejection as their
   * result), then the loop continues under the same request id, and may pause again. 404/401/
   * 409 (not paused, already decided)/422 happen here, before a stream is opened.
   */
  async resume(
    agent: AgentDefinition,
    principal: Principal,
    requestId: string,
    body: ResumeDecision,
  ): Promise<StartedRequest & { decision: ApprovalDecision; decisionCount: number }> {
    const taken = await takeDecision(this.store, agent, principal, requestId, body, this.timing);
    const running = new RunningTask(this.store, taken.task, taken.request, this.timing, this.logger);
    const ids = { task_id: taken.task.taskId, session_id: taken.task.sessionId, request_id: requestId };
    return {
      ids,
      seq: taken.request.seq,
      queued: false,
      decision: taken.decision,
      decisionCount: taken.request.approvals?.length ?? 1,
      run: (options = {}) => {
        if (taken.decision.approved.length) options.emit?.('approved', { ...ids, tool_call_ids: taken.decision.approved });
        if (taken.decision.rejected.length) options.emit?.('rejected', { ...ids, tool_call_ids: taken.decision.rejected });
        return this.launch(agent, running, taken.earlier, ids, options, taken.resume);
      },
    };
  }

  private launch(
    agent: AgentDefinition,
    running: RunningTask,
    earlier: RequestRecord[],
    ids: StartedRequest['ids'],
    options: StatefulInvokeOptions,
    resume?: RunOptions['resume'],
  ): Promise<StateResponse> {
    // One controller per request: the caller's signal, a local cancel, or a cancel relayed
    // through the task record by another replica all abort the same model call and tools.
    const controller = new AbortController();
    const forward = () => controller.abort(options.signal?.reason);
    if (options.signal?.aborted) forward();
    else options.signal?.addEventListener('abort', forward, { once: true });
    running.onCancelRequested = () => controller.abort(new Error('canceled by the user'));
    const done = this.run(agent, running, earlier, ids, { ...options, signal: controller.signal }, resume);
    this.runningRequests.register(ids.request_id, controller, done);
    return done.finally(() => options.signal?.removeEventListener('abort', forward));
  }

  private run(
    agent: AgentDefinition,
    running: RunningTask,
    earlier: RequestRecord[],
    ids: StartedRequest['ids'],
    options: StatefulInvokeOptions,
    resume?: RunOptions['resume'],
  ): Promise<StateResponse> {
    const request = running.request;
    return this.telemetry.inSpan(
      `invoke_agent ${agent.source}`,
      {
        'ta.agent.name': agent.name,
        'ta.agent.version': agent.version,
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.request.model': agent.agent.model,
        'ta.task_id': ids.task_id,
        'ta.request_id': ids.request_id,
      },
      async (span) => {
        running.startRenewal();
        try {
          const conversation = buildTaskConversation(earlier, request);
          const onDelta = options.emit ? (text: string) => options.emit!('partial-response', { ...ids, output_partial: text }) : undefined;
          const result = await this.runner.run(agent.agent, conversation, {
            signal: options.signal,
            onDelta,
            caller: { principal: { tenantId: request.tenantId, ownerId: request.ownerId }, bearerToken: options.bearerToken },
            ...toolEvents(ids, options.emit),
            approvals: { policy: agent.governance, canPause: true },
            resume,
          });
          const now = new Date().toISOString();
          // A resumed request keeps what it did before its pause (trace and usage).
          const toolCalls = [...running.request.toolCalls, ...result.toolExecutions.map(toolCallTrace)];
          const usage = addUsage(running.request.tokenUsage, result.usage);
          if (result.paused) {
            const pending = pendingApprovalsOf(result.paused, now);
            const paused: RequestRecord = {
              ...running.request,
              status: 'Paused',
              // Up to the turn that waits (its assistant message last): the resume continues from there.
              messages: [...running.request.messages, ...storedToolRounds(result, now)],
              toolCalls,
              tokenUsage: usage,
              pendingApprovals: pending,
              updatedAt: now,
            };
            await running.finish({ status: 'Paused' }, paused, { handOver: false });
            const response = hitlResponse(agent, ids, pending);
            options.emit?.('approval-required', { ...response.content });
            return response;
          }
          const finished: RequestRecord = {
            ...running.request,
            status: 'Completed',
            // The tool rounds, then the answer: a follow-on replays exactly what the model saw.
            messages: [
              ...running.request.messages,
              ...storedToolRounds(result, now),
              { id: randomUUID(), role: 'assistant', content: result.content, created_at: now },
            ],
            toolCalls,
            output: result.content,
            tokenUsage: usage,
            updatedAt: now,
          };
          this.continueWith(agent, running, await running.finish({ status: 'Completed' }, finished));
          span.setAttributes({
            'gen_ai.usage.input_tokens': result.usage.prompt_tokens,
            'gen_ai.usage.output_tokens': result.usage.completion_tokens,
          });
          this.telemetry.recordTokens(result.usage, { 'gen_ai.request.model': agent.agent.model, 'ta.agent.name': agent.name });
          return {
            ...ids,
            status: 'Completed',
            content: { ...ids, output: result.content, source: agent.source, token_usage: usage, extra_data: null },
          };
        } catch (err) {
          await this.recordFailure(agent, running, err);
          if (err instanceof DomainError && err.code === ErrorCode.REQUEST_CANCELED) {
            options.emit?.('cancelled', { ...ids, reason: 'canceled' });
            return { ...ids, status: 'Canceled', content: { ...ids, message: 'The request was canceled' } };
          }
          throw err;
        } finally {
          running.stopRenewal();
        }
      },
    );
  }

  /** Creates the task, or appends a request to it under its lease, in one compare-and-set. */
  private async begin(
    agent: AgentDefinition,
    principal: Principal,
    msg: UserMessage,
  ): Promise<{ running: RunningTask; earlier: RequestRecord[] } | { queued: RequestRecord }> {
    if (!msg.task_id) return { running: await this.create(agent, principal, msg), earlier: [] };
    for (let attempt = 0; attempt < MAX_BEGIN_ATTEMPTS; attempt++) {
      const task = await this.store.getTask(principal.tenantId, msg.task_id);
      if (!task || task.agent !== agent.source) {
        throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${msg.task_id}`);
      }
      if (task.ownerId !== principal.ownerId) {
        throw new DomainError(ErrorCode.NOT_OWNER, 'This task belongs to another user');
      }
      if (msg.session_id && msg.session_id !== task.sessionId) {
        throw new DomainError(ErrorCode.VALIDATION_FAILED, 'session_id does not match the task', {
          errors: [{ field: 'session_id', message: `task ${task.taskId} belongs to another session` }],
        });
      }
      if (task.status === 'Paused') {
        throw new DomainError(ErrorCode.TASK_BUSY, `Task ${task.taskId} is waiting for an approval decision`);
      }
      if (leaseActive(task)) {
        if (agent.concurrency.on_busy !== 'enqueue') throw busy(task);
        const queued = await this.enqueue(principal, task, msg);
        if (queued) return { queued };
        continue; // the task changed meanwhile: look again
      }
      const earlier = await this.store.listRequests(principal.tenantId, task.taskId);
      const request = newRequestRecord(task, principal, msg, task.requestCount);
      const writes: RequestRecord[] = [request];
      // A lease that lapsed belongs to a request whose process died: close that request as Failed.
      const abandoned = task.lease && earlier.find((r) => r.requestId === task.lease!.requestId && r.status === 'Running');
      if (abandoned) {
        const closed: RequestRecord = {
          ...abandoned,
          status: 'Failed',
          error: { code: 'ABANDONED', message: 'The process running this request stopped before it finished' },
          updatedAt: request.createdAt,
        };
        writes.push(closed);
        earlier[abandoned.seq] = closed;
      }
      const waiting = await this.supersedeQueued(task, request.createdAt);
      if (waiting) {
        writes.push(waiting);
        earlier[waiting.seq] = waiting;
      }
      const next: TaskRecord = {
        ...task,
        queued: undefined,
        status: 'Running',
        requestCount: task.requestCount + 1,
        lease: { requestId: request.requestId, expiresAt: Date.now() + this.timing.leaseMs },
        updatedAt: request.createdAt,
      };
      delete next.queued;
      const expiresAt = expiryFrom(this.timing);
      if (expiresAt) next.expiresAt = expiresAt;
      try {
        const stored = await this.store.commit(principal.tenantId, { task: next, expectedVersion: task.version, requests: writes });
        return { running: new RunningTask(this.store, stored, request, this.timing, this.logger), earlier };
      } catch (err) {
        if (!(err instanceof VersionConflictError)) throw err;
        // Someone else wrote first: re-read; if they now hold the lease this becomes a 409.
      }
    }
    throw new DomainError(ErrorCode.TASK_BUSY, `Task ${msg.task_id} is busy`);
  }

  private async create(agent: AgentDefinition, principal: Principal, msg: UserMessage): Promise<RunningTask> {
    const task = newTaskRecord(agent.source, principal, msg);
    const request = newRequestRecord(task, principal, msg, 0);
    task.lease = { requestId: request.requestId, expiresAt: Date.now() + this.timing.leaseMs };
    const expiresAt = expiryFrom(this.timing);
    if (expiresAt) task.expiresAt = expiresAt;
    const stored = await this.store.commit(principal.tenantId, { task, expectedVersion: 0, requests: [request] });
    return new RunningTask(this.store, stored, request, this.timing, this.logger);
  }

  /**
   * `on_busy: enqueue`: stores the follow-on as the task's one waiting request (a newer one
   * supersedes it: Canceled, reason `superseded`). Undefined when the task changed meanwhile.
   */
  private async enqueue(principal: Principal, task: TaskRecord, msg: UserMessage): Promise<RequestRecord | undefined> {
    const request: RequestRecord = { ...newRequestRecord(task, principal, msg, task.requestCount), status: 'Queued' };
    const writes: RequestRecord[] = [request];
    const waiting = await this.supersedeQueued(task, request.createdAt);
    if (waiting) writes.push(waiting);
    const next: TaskRecord = { ...task, requestCount: task.requestCount + 1, queued: request.requestId, updatedAt: request.createdAt };
    const expiresAt = expiryFrom(this.timing);
    if (expiresAt) next.expiresAt = expiresAt;
    try {
      await this.store.commit(principal.tenantId, { task: next, expectedVersion: task.version, requests: writes });
      return request;
    } catch (err) {
      if (err instanceof VersionConflictError) return undefined;
      throw err;
    }
  }

  /** The task's waiting request, closed as superseded (to be written with the newer one), if any. */
  private async supersedeQueued(task: TaskRecord, now: string): Promise<RequestRecord | undefined> {
    if (!task.queued) return undefined;
    const waiting = await this.store.getRequest(task.tenantId, task.queued);
    if (!waiting || waiting.status !== 'Queued') return undefined;
    return { ...waiting, status: 'Canceled', reason: 'superseded', updatedAt: now };
  }

  /**
   * After a request ended and handed its lease to the queued follow-on (same write), runs that
   * follow-on here, in the background: its caller is waiting on the store (202, or its stream).
   */
  private continueWith(agent: AgentDefinition, finished: RunningTask, next: RequestRecord | undefined): void {
    if (!next) return;
    const ids = { task_id: next.taskId, session_id: next.sessionId, request_id: next.requestId };
    const work = (async () => {
      const earlier = (await this.store.listRequests(next.tenantId, next.taskId)).filter((r) => r.seq < next.seq);
      const running = new RunningTask(this.store, finished.task, next, this.timing, this.logger);
      await this.launch(agent, running, earlier, ids, {});
    })();
    work.catch((err) => this.logger.warn({ err, ...ids }, 'queued request failed'));
  }

  /** Marks the request Failed (or Canceled) and releases the lease; the next follow-on works. */
  private async recordFailure(agent: AgentDefinition, running: RunningTask, err: unknown): Promise<void> {
    const canceled = err instanceof DomainError && err.code === ErrorCode.REQUEST_CANCELED;
    const status = canceled ? 'Canceled' : 'Failed';
    const code = err instanceof DomainError ? err.code : ErrorCode.INTERNAL;
    const message = err instanceof DomainError ? err.message : 'Internal error';
    const now = new Date().toISOString();
    // What its tools did stays on the request (trace and messages); a failed request is not replayed.
    const partial = partialRunOf(err);
    const done = partial?.toolExecutions.length
      ? { messages: [...running.request.messages, ...storedToolRounds(partial, now)], toolCalls: [...running.request.toolCalls, ...partial.toolExecutions.map(toolCallTrace)] }
      : {};
    try {
      const record: RequestRecord = { ...running.request, ...done, status, error: { code, message }, updatedAt: now };
      if (canceled) record.reason = 'canceled';
      this.continueWith(agent, running, await running.finish({ status }, record));
    } catch (writeErr) {
      // The lease will lapse and the next follow-on closes this request as abandoned.
      this.logger.error({ err: writeErr, task_id: running.task.taskId }, 'could not record the failed request');
    }
  }
}

/** Streaming: `tool-call` when a call starts, `tool-result` when it ends, with the request's ids. */
function toolEvents(ids: StartedRequest['ids'], emit: StatefulInvokeOptions['emit']) {
  if (!emit) return {};
  return {
    onToolCall: (c: LlmToolCall) => emit('tool-call', { ...ids, tool_call_id: c.id, name: c.name, arguments: c.arguments }),
    onToolResult: (e: ToolExecution) =>
      emit('tool-result', { ...ids, tool_call_id: e.id, name: e.name, outcome: e.outcome, result: e.result, duration_ms: e.duration_ms }),
  };
}

function busy(task: TaskRecord): DomainError {
  return new DomainError(ErrorCode.TASK_BUSY, `Task ${task.taskId} has a request running (${task.lease?.requestId})`, {
    retryAfter: 1,
  });
}
