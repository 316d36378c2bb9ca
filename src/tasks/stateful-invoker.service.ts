import { Injectable } from '@nestjs/common';
import { newUuid } from '../common/ids/uuid.util';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { AuditLog } from '../common/logging/audit-log';
import { LogContext } from '../common/logging/log-context';
import { ApprovalDecision, RequestRecord, TaskRecord } from '../state/state.entities';
import { VersionConflictError } from '../state/state.errors';
import { admitFollowOn, admitNew, RunNow } from './lifecycle/admit';
import { decide, Decided, ResumeDecision } from './lifecycle/decide';
import { refine } from './lifecycle/refine';
import { idsOf, responseOf } from './views/request-response';
import { Emit, RequestRunnerService, RunOptions } from './run/request-runner.service';
import { RequestWatcherService } from './run/request-watcher.service';
import { TaskDeletionService } from './task-deletion.service';
import { TaskEventLogService } from './events/task-event-log.service';
import { StreamEventWriterService } from './events/stream-event-writer.service';
import { assertStorable } from './run/storable-request';
import { IDS_PER_DECISION } from './events/stream-outcome';
import { newRequestRecord, newTaskRecord } from './run/task-records';
import { owned } from './writer/task-access';
import { TaskReaderService } from './writer/task-reader.service';
import { claimed, TaskWriterService } from './writer/task-writer.service';
import type { StartedRequest } from './run/started-request';
import type { IdempotencyClaim } from './idempotency/idempotency-claim';
import { IdempotencyService } from './idempotency/idempotency.service';
import { requestWebhookDestination } from './webhooks/webhook-url.policy';
import { IdempotentReplayService } from './idempotency/idempotent-replay.service';
import type { UserMessage } from './run/user-message';

/**
 * `requestId`: the new request's id when the caller chose it (AG-UI: its `runId`); new otherwise.
 * `clientTools`: tools the caller runs itself (AG-UI), offered to the model on this run.
 */
export interface StartOptions {
  requestId?: string;
  clientTools?: RunOptions['clientTools'];
  /** The POST's Idempotency-Key (src/tasks/idempotency/idempotency-claim.ts). */
  claim?: IdempotencyClaim;
}

/**
 * The stateful (tealagents/v1alpha1) invocation, as orchestration only: each step is one
 * lifecycle transition (src/tasks/lifecycle/) applied by the task writer (ownership, the
 * compare-and-set loop, lost answers); running is the RequestRunnerService's, watching a request that
 * runs elsewhere the RequestWatcherService's. 404/401/409/422 happen before anything runs or any stream opens.
 */
@Injectable()
export class StatefulInvokerService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly runner: RequestRunnerService,
    private readonly watcher: RequestWatcherService,
    private readonly events: TaskEventLogService,
    private readonly stored: StreamEventWriterService,
    private readonly deletion: TaskDeletionService,
    private readonly audit: AuditLog,
    private readonly idempotency: IdempotencyService,
    private readonly replays: IdempotentReplayService,
  ) {}

  /**
   * Creates the task or admits a follow-on (runs now, or waits with `on_busy: enqueue`). A `task_id`
   * that does not exist (for this tenant) is created under that id, owned by the caller, as
   * upstream's `_manage_incoming_task` does.
   */
  start(agent: AgentDefinition, principal: Principal, msg: UserMessage, options: StartOptions = {}): Promise<StartedRequest> {
    return this.idempotency.once(
      options.claim,
      () => this.startOnce(agent, principal, msg, options),
      (entry) => this.replays.started(agent, principal, entry),
    );
  }

  private async startOnce(agent: AgentDefinition, principal: Principal, given: UserMessage, options: StartOptions): Promise<StartedRequest> {
    const msg = withCheckedWebhook(agent, given);
    if (!msg.task_id) return this.create(agent, principal, msg, options);
    const taskId = msg.task_id;
    try {
      return await this.followOn(agent, principal, msg, taskId, options);
    } catch (err) {
      if (!isCode(err, ErrorCode.TASK_NOT_FOUND)) throw err;
    }
    // The create is a compare-and-set on "no such task" (`expectedVersion: 0`): of callers racing to
    // create the same id exactly one wins. The others find the winner's task and go on as follow-ons:
    // another user is refused (401), the owner's own second call is busy (409) or queued.
    try {
      return await this.create(agent, principal, msg, options);
    } catch (err) {
      if (!(err instanceof VersionConflictError)) throw err;
      // The id is held by a task whose deletion a crash interrupted: finish it, then create afresh.
      if (await this.deletion.finishInterrupted(principal.tenantId, taskId)) {
        try {
          return await this.create(agent, principal, msg, options);
        } catch (again) {
          if (!(again instanceof VersionConflictError)) throw again;
        }
      }
    }
    try {
      return await this.followOn(agent, principal, msg, taskId, options);
    } catch (err) {
      // It exists, yet is no task of this agent: another agent of the tenant holds the id (keys are per tenant).
      if (isCode(err, ErrorCode.TASK_NOT_FOUND))
        throw new DomainError(ErrorCode.VERSION_CONFLICT, `task_id ${taskId} is taken by another agent's task; name another`);
      throw err;
    }
  }

  private async create(agent: AgentDefinition, principal: Principal, msg: UserMessage, options: StartOptions): Promise<StartedRequest> {
    const task = newTaskRecord(agent.source, principal, msg);
    const { result } = await this.writer.create(
      principal.tenantId,
      admitNew(
        task,
        assertStorable(this.writer.maxRequestBytes, newRequestRecord(task, principal, msg, 0, options.requestId)),
        this.writer.now(),
        this.writer.timing,
      ),
      claimed(options.claim, (r) => r.request.requestId),
    );
    return this.runnable(agent, result, { clientTools: options.clientTools });
  }

  private async followOn(agent: AgentDefinition, principal: Principal, msg: UserMessage, taskId: string, options: StartOptions): Promise<StartedRequest> {
    const placeholder = { taskId, sessionId: msg.session_id ?? '' } as TaskRecord;
    const record = assertStorable(this.writer.maxRequestBytes, newRequestRecord(placeholder, principal, msg, 0, options.requestId));
    const admission = admitFollowOn({ request: record, sessionId: msg.session_id, onBusy: agent.concurrency.on_busy, timing: this.writer.timing });
    let result;
    try {
      ({ result } = await this.writer.update(
        owned(agent, principal, taskId),
        admission,
        {},
        claimed(options.claim, (r) => r.request.requestId),
      ));
    } catch (err) {
      if (!isCode(err, ErrorCode.TASK_PAUSED) || agent.governance.on_paused !== 'refine') throw err;
      return this.refine(agent, principal, msg, taskId, record, options.claim);
    }
    if (result.kind === 'run') return this.runnable(agent, result, { clientTools: options.clientTools });
    if (result.takeOver) this.runner.runInBackground(agent, result.takeOver);
    return this.waiting(agent, result.request);
  }

  /**
   * `on_paused: refine`: the message refines the waiting plan (lifecycle `refine`) and the paused
   * request runs on under its own id, the model planning again from the message; it may pause again.
   */
  private async refine(
    agent: AgentDefinition,
    principal: Principal,
    msg: UserMessage,
    taskId: string,
    record: RequestRecord,
    claim: IdempotencyClaim | undefined,
  ): Promise<StartedRequest> {
    const user = record.messages.find((m) => m.role === 'user');
    const items = user?.role === 'user' ? user.items : [];
    const text = items
      .filter((i) => i.content_type === 'text')
      .map((i) => i.content)
      .join('\n');
    const access = owned(agent, principal, taskId);
    const transition = refine({ items, text, sessionId: msg.session_id, refinedBy: principal.ownerId, mint: newUuid, timing: this.writer.timing });
    const { request, decision } = (
      await this.writer.update(
        access,
        transition,
        {},
        claimed(claim, (r) => r.request.requestId),
      )
    ).result;
    const ids = idsOf(request);
    const names = toolCallNames(request);
    this.audit.record('approval.refined', {
      ...ids,
      pause_id: decision.pauseId,
      tool_calls: decision.rejected.map((id) => ({ id, name: names.get(id) ?? '' })),
    });
    const earlier = (await this.reader.task(access, 'all', { cached: true })).requests.filter((r) => r.seq < request.seq);
    const announce = (emit?: Emit) => emit?.('rejected', { ...ids, tool_call_ids: decision.rejected, reason: 'refined' });
    return this.runnable(agent, { request, earlier }, { announce, startAt: () => this.resumeStartAt(request) });
  }

  /**
   * Decides the current pause of a paused request (lifecycle `decide`) and returns it ready to run
   * on under the same request id; it may pause again. A rejection of every pending call ends it
   * Canceled (`rejected`) with no further model call.
   */
  resume(
    agent: AgentDefinition,
    principal: Principal,
    requestId: string,
    body: ResumeDecision,
    options: Pick<StartOptions, 'clientTools' | 'claim'> = {},
  ): Promise<StartedRequest> {
    return this.idempotency.once(
      options.claim,
      () => this.resumeOnce(agent, principal, requestId, body, options),
      (entry) => this.replays.started(agent, principal, entry),
    );
  }

  private async resumeOnce(
    agent: AgentDefinition,
    principal: Principal,
    requestId: string,
    body: ResumeDecision,
    options: Pick<StartOptions, 'clientTools' | 'claim'>,
  ): Promise<StartedRequest> {
    const taskId = await this.reader.taskOfRequest(principal.tenantId, requestId, { cached: true });
    if (taskId === undefined) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${requestId}`);
    const access = owned(agent, principal, taskId);
    let decided: Decided;
    try {
      // Decided on every request of the task (the decision needs its own only): the run that follows
      // needs the earlier ones, and so the writer's view after the commit holds them all.
      const transition = { ...decide({ requestId, body, decidedBy: principal.ownerId, timing: this.writer.timing }), reads: 'all' as const };
      decided = (
        await this.writer.update(
          access,
          transition,
          {},
          claimed(options.claim, (r) => r.request.requestId),
        )
      ).result;
    } catch (err) {
      if (err instanceof DomainError && err.code === ErrorCode.TASK_NOT_FOUND) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${requestId}`);
      throw err;
    }
    const { request, decision } = decided;
    const ids = idsOf(request);
    logRequestIds(request);
    this.auditDecision(request, decision, ids);
    const announce = (emit?: Emit) => {
      if (decision.approved.length && decided.kind === 'resumed') emit?.('approved', { ...ids, tool_call_ids: decision.approved });
      if (decision.rejected.length) emit?.('rejected', { ...ids, tool_call_ids: decision.rejected });
    };
    if (decided.kind === 'rejected') {
      const end = async (emit?: Emit) => {
        announce(emit);
        emit?.('cancelled', { ...ids, reason: 'rejected' });
        return responseOf(agent, request);
      };
      return {
        ids,
        queued: false,
        finished: true,
        run: () => end(),
        stream: async ({ instance }) => {
          const startAt = await this.resumeStartAt(request);
          return { log: this.runner.streamed(agent, request, startAt, instance, end), after: startAt - 1 };
        },
      };
    }
    // Right after this caller's own commit, the writer's view of the task is what was stored.
    const earlier = (await this.reader.task(access, 'all', { cached: true })).requests.filter((r) => r.seq < request.seq);
    const startAt = () => this.resumeStartAt(request);
    return this.runnable(agent, { request, earlier }, { resume: decided.resume, announce, startAt, clientTools: options.clientTools });
  }

  /**
   * The first event n of a resume stream: after every id the request's earlier streams (its first
   * run and each earlier resume) used — this process's event log, else the stored stream log —
   * and at least (pauses so far) × IDS_PER_DECISION, so ids stay strictly increasing across all
   * of a request's streams however long each was. Read only when a stream opens: a JSON resume
   * reads no stream log.
   */
  private async resumeStartAt(request: Pick<RequestRecord, 'tenantId' | 'taskId' | 'seq' | 'approvals'>): Promise<number> {
    const next = Math.max((request.approvals?.length ?? 1) * IDS_PER_DECISION, this.events.get(request.tenantId, request.taskId, request.seq)?.next ?? 0);
    const last = await this.stored.lastStoredId(request.tenantId, request.taskId, request.seq, next - 1);
    return last === undefined ? next : Math.max(next, last + 1);
  }

  /** One audit record per kind of verdict (a decision may approve some calls and reject others). */
  private auditDecision(request: RequestRecord, decision: ApprovalDecision, ids: ReturnType<typeof idsOf>): void {
    const names = toolCallNames(request);
    const calls = (ids: string[]) => ids.map((id) => ({ id, name: names.get(id) ?? '' }));
    if (decision.approved.length) this.audit.record('approval.approved', { ...ids, pause_id: decision.pauseId, tool_calls: calls(decision.approved) });
    if (decision.rejected.length) {
      this.audit.record('approval.rejected', { ...ids, pause_id: decision.pauseId, tool_calls: calls(decision.rejected), reason: decision.reason });
    }
  }

  runnable(
    agent: AgentDefinition,
    run: RunNow,
    extra: { resume?: RunOptions['resume']; announce?: (emit?: Emit) => void; startAt?: () => Promise<number>; clientTools?: RunOptions['clientTools'] } = {},
  ): StartedRequest {
    logRequestIds(run.request);
    return {
      ids: idsOf(run.request),
      queued: false,
      run: (options = {}) => {
        extra.announce?.();
        return this.runner.run(agent, run, { ...options, resume: extra.resume, clientTools: extra.clientTools });
      },
      stream: async ({ bearerToken, instance }) => {
        const startAt = extra.startAt ? await extra.startAt() : 0;
        const log = this.runner.streamed(agent, run.request, startAt, instance, (emit) => {
          extra.announce?.(emit);
          return this.runner.run(agent, run, { emit, bearerToken, resume: extra.resume, clientTools: extra.clientTools });
        });
        return { log, after: startAt - 1 };
      },
    };
  }

  /** A queued request: watched until it runs (here or elsewhere) and ends; its stream sends `queued` first. */
  private waiting(agent: AgentDefinition, request: RequestRecord): StartedRequest {
    logRequestIds(request);
    const watched = { tenantId: request.tenantId, taskId: request.taskId, requestId: request.requestId };
    return {
      ids: idsOf(request),
      queued: true,
      run: async () => {
        this.watcher.watchInBackground(agent, watched);
        return undefined;
      },
      stream: async () => {
        const log = this.events.open(request.tenantId, request.taskId, request.seq);
        this.events.append(log, 'queued', { ...idsOf(request), status: 'Queued' });
        void this.watcher.watch(agent, watched, log).catch(() => undefined);
        return { log, after: -1 };
      },
    };
  }
}

/** Names the admitted request in the log lines and the span of the HTTP request being served. */
export function logRequestIds(request: Pick<RequestRecord, 'taskId' | 'sessionId' | 'requestId'>): void {
  LogContext.active()?.set(idsOf(request));
}

/** The names of a request's tool calls, by id (its assistant turns hold them). */
function toolCallNames(request: RequestRecord): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of request.messages) if (m.role === 'assistant') for (const c of m.tool_calls ?? []) names.set(c.id, c.name);
  for (const c of request.pendingApprovals?.calls ?? []) names.set(c.id, c.name);
  return names;
}

/** The message with its `webhook_url` as the agent allows it (normalised), or 422 naming the field (webhook-url.policy.ts). */
export function withCheckedWebhook(agent: AgentDefinition, msg: UserMessage): UserMessage {
  if (msg.webhook_url === undefined) return msg;
  return { ...msg, webhook_url: requestWebhookDestination(agent.webhooks, msg.webhook_url).url };
}

function isCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof DomainError && err.code === code;
}
