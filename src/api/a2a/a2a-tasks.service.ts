import { Role, TaskState } from '@a2a-js/sdk';
import type { CancelTaskRequest, GetTaskRequest, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { RequestRecord } from '../../state/state.entities';
import { RequestEventLog, TaskEventLogService } from '../../tasks/events/task-event-log.service';
import { TaskStreamAttachService } from '../../tasks/reattach/task-stream-attach.service';
import type { StartedRequest } from '../../tasks/run/started-request';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import { TaskCancelService } from '../../tasks/task-cancel.service';
import { TaskQueryService } from '../../tasks/task-query.service';
import { parseClientIdParam } from '../v3/client-id';
import { A2aEventMapper } from './a2a-events.util';
import { decisionOf, idsMetadata, itemsOf, message, taskOf } from './a2a-mapping.util';
import { AsyncQueue } from './async-queue.util';

/** What every call carries besides its params: the caller's token (for tools), the path (problems' `instance`), the client's going away. */
export interface A2aCall {
  bearerToken?: string;
  instance: string;
  signal: AbortSignal;
  /** Keeps the caller's concurrency slot (spec.limits) past the answer, for a run that goes on in the background; call the result when it ends. */
  keepSlot?: () => () => void;
}

const ENDED = new Set(['Completed', 'Failed', 'Canceled']);

/**
 * The A2A operations of a stateful (tealagents/v1alpha1) agent, translated onto the services every
 * front door shares (docs/a2a.md, Mapping): a message starts a turn (`StatefulInvokerService.start`,
 * the `contextId` as our `task_id`) or, replying to an `input-required` task with a decision,
 * decides its pause (`resume`: the same compare-and-set); a task is read, canceled and followed
 * through the task query, cancel and reattach services. Ownership is theirs: another user's task
 * fails as NOT_OWNER/TASK_NOT_FOUND, which the endpoint answers as A2A's TaskNotFound.
 */
@Injectable()
export class A2aTasksService {
  constructor(
    private readonly invoker: StatefulInvokerService,
    private readonly tasks: TaskQueryService,
    private readonly control: TaskCancelService,
    private readonly events: TaskEventLogService,
    private readonly attach: TaskStreamAttachService,
  ) {}

  /** `message/send`: the task once it ended or paused (or at once, `returnImmediately`: working). */
  async send(agent: AgentDefinition, principal: Principal, params: SendMessageRequest, call: A2aCall): Promise<Task> {
    const started = await this.start(agent, principal, params);
    if (params.configuration?.returnImmediately && !started.finished) {
      if (started.queued) await started.run({ bearerToken: call.bearerToken });
      else await this.inBackground(started, call);
      return this.snapshot(agent, principal, started, params);
    }
    try {
      await started.run({ bearerToken: call.bearerToken });
    } catch (err) {
      // A run that failed after it was admitted is a failed task, not a refused call.
      if (!(err instanceof DomainError) || !err.extensions?.request_id) throw err;
    }
    return this.snapshot(agent, principal, started, params);
  }

  /** Runs it here as a streamed run (lease, cancel, approvals, the stream log), holding the caller's slot until it ends, as `Prefer: respond-async` does. */
  private async inBackground(started: StartedRequest, call: A2aCall): Promise<void> {
    const release = call.keepSlot?.();
    try {
      const { log, after } = await started.stream({ bearerToken: call.bearerToken, instance: call.instance });
      if (release) void this.events.follow(log, after, () => undefined, new AbortController().signal).then(release);
    } catch (err) {
      release?.();
      throw err;
    }
  }

  /** `message/stream`: the task (working), then its events as they come, until it ends or pauses. */
  async *stream(agent: AgentDefinition, principal: Principal, params: SendMessageRequest, call: A2aCall): AsyncGenerator<StreamResponse> {
    const started = await this.start(agent, principal, params);
    const { log, after } = await started.stream({ bearerToken: call.bearerToken, instance: call.instance });
    const ids = { contextId: started.ids.task_id, taskId: started.ids.request_id, metadata: idsOf(started) };
    const history = params.message && !params.message.taskId ? [message(Role.ROLE_USER, params.message.parts, ids)] : [];
    const state = started.queued ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING;
    yield {
      payload: { $case: 'task', value: { id: ids.taskId, contextId: ids.contextId, status: status(state), artifacts: [], history, metadata: ids.metadata } },
    };
    yield* this.follow(log, after, new A2aEventMapper(ids), call.signal);
  }

  /** `tasks/get`. */
  async get(agent: AgentDefinition, principal: Principal, params: GetTaskRequest): Promise<Task> {
    return taskOf(agent, await this.record(agent, principal, params.id), params.historyLength);
  }

  /** `tasks/cancel`: an ended task is TaskNotCancelable; the answer is the task as it stands after the cancel. */
  async cancel(agent: AgentDefinition, principal: Principal, params: CancelTaskRequest): Promise<Task> {
    const record = await this.record(agent, principal, params.id);
    if (ENDED.has(record.status)) throw new DomainError(ErrorCode.TASK_NOT_RUNNING, `Task ${params.id} has ended (${record.status}): nothing to cancel`);
    await this.control.cancel(agent, principal, record.taskId);
    return taskOf(agent, await this.record(agent, principal, params.id));
  }

  /**
   * `tasks/resubscribe`: the task as it stands, then (while it runs) its events from its first
   * one, on any replica (TaskStreamAttachService: this replica's log, else the store's stream log).
   */
  async *resubscribe(agent: AgentDefinition, principal: Principal, params: SubscribeToTaskRequest, call: A2aCall): AsyncGenerator<StreamResponse> {
    const record = await this.record(agent, principal, params.id);
    yield { payload: { $case: 'task', value: { ...taskOf(agent, record), artifacts: [] } } };
    if (ENDED.has(record.status) || record.status === 'Paused') {
      const ids = { contextId: record.taskId, taskId: record.requestId, metadata: idsMetadata(record) };
      const mapper = new A2aEventMapper(ids);
      const final = taskOf(agent, record);
      for (const a of final.artifacts) yield { payload: { $case: 'artifactUpdate', value: { ...ids, artifact: a, append: false, lastChunk: true } } };
      yield mapper.status(final.status!.state, final.status!.message);
      return;
    }
    const attached = await this.attach.attach(agent, principal, record.taskId, { seq: record.seq, n: -1 });
    if (attached.kind === 'ended') return;
    try {
      const ids = { contextId: record.taskId, taskId: record.requestId, metadata: idsMetadata(record) };
      yield* this.follow(attached.log, attached.after, new A2aEventMapper(ids), call.signal);
    } finally {
      attached.release();
    }
  }

  private async start(agent: AgentDefinition, principal: Principal, params: SendMessageRequest): Promise<StartedRequest> {
    const msg = params.message;
    if (!msg) throw new DomainError(ErrorCode.VALIDATION_FAILED, 'message is required', { errors: [{ field: 'message', message: 'is required' }] });
    if (msg.taskId) {
      const decision = decisionOf(msg.parts);
      if (!decision) {
        const detail = 'a message naming a taskId answers its input-required status: it needs a data part {decision, pause_id, reason?}';
        throw new DomainError(ErrorCode.VALIDATION_FAILED, detail, { errors: [{ field: 'message.parts', message: detail }] });
      }
      const record = await this.record(agent, principal, msg.taskId);
      if (msg.contextId && msg.contextId !== record.taskId)
        throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${msg.taskId} in context ${msg.contextId}`);
      return this.invoker.resume(agent, principal, record.requestId, decision);
    }
    const sessionId = typeof params.metadata?.session_id === 'string' ? params.metadata.session_id : undefined;
    const taskId = msg.contextId ? parseClientIdParam('task_id', msg.contextId) : undefined;
    return this.invoker.start(agent, principal, {
      items: itemsOf(msg.parts),
      ...(taskId ? { task_id: taskId } : {}),
      ...(sessionId ? { session_id: sessionId } : {}),
    });
  }

  /** The request an A2A task id names, the caller's own (another user's or tenant's: TASK_NOT_FOUND). */
  private async record(agent: AgentDefinition, principal: Principal, id: string): Promise<RequestRecord> {
    const taskId = id ? await this.tasks.taskIdOfRequest(principal, id) : undefined;
    if (taskId === undefined) throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${id}`);
    const record = (await this.tasks.requests(agent, principal, taskId)).find((r) => r.requestId === id.toLowerCase());
    if (!record) throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${id}`);
    return record;
  }

  private async snapshot(agent: AgentDefinition, principal: Principal, started: StartedRequest, params: SendMessageRequest): Promise<Task> {
    const record = await this.record(agent, principal, started.ids.request_id);
    return taskOf(agent, record, params.configuration?.historyLength);
  }

  /** A followed event log as stream responses, until the log closes or the client goes away. */
  private async *follow(log: RequestEventLog, after: number, mapper: A2aEventMapper, signal: AbortSignal): AsyncGenerator<StreamResponse> {
    const queue = new AsyncQueue<StreamResponse>();
    this.events
      .follow(log, after, (e) => queue.push(...mapper.map(e)), signal)
      .then(
        () => queue.end(),
        (err: unknown) => queue.end(err),
      );
    yield* queue;
  }
}

function idsOf(started: StartedRequest): Record<string, string> {
  return { ...started.ids };
}

function status(state: TaskState) {
  return { state, message: undefined, timestamp: new Date().toISOString() };
}
