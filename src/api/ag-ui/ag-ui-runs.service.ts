import type { BaseEvent, RunAgentInput } from '@ag-ui/core';
import { EventType } from '@ag-ui/core';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { problemOf } from '../../common/errors/problem-of';
import type { LlmToolSpec } from '../../llm/llm-client.port';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import type { StartedRequest } from '../../tasks/run/started-request';
import { TaskEventLogService } from '../../tasks/events/task-event-log.service';
import { TaskQueryService } from '../../tasks/task-query.service';
import type { IdempotencyClaim } from '../../tasks/idempotency/idempotency-claim';
import { IdempotencyService } from '../../tasks/idempotency/idempotency.service';
import { IdempotentReplayService } from '../../tasks/idempotency/idempotent-replay.service';
import { AgUiStream } from './ag-ui-stream';
import { AgUiEventMapper } from './event-mapper';
import { messagesOf } from './messages-snapshot';
import { clientToolsOf } from './client-tools';
import { turnOf } from './new-turn';
import { resumeDecisionOf } from './resume-decision';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface RunContext {
  bearerToken?: string;
  /** The request path (problem details' `instance`). */
  instance: string;
  /** The run's Idempotency-Key: a repeat replays the first copy's run instead of starting one. */
  claim?: IdempotencyClaim;
}

/**
 * An AG-UI run (`POST /{name}/{version}/ag-ui`) as the v3 operations it stands for: `threadId` is
 * the task (a new thread creates it, owned by the caller), a run with a new user message is a
 * follow-on (`POST /sse`) whose request id is the `runId`, a run with `resume` entries decides the
 * pause they name (`POST .../resume/{request_id}/sse`, the same compare-and-set), a run with
 * `tool` messages answers the client-side tool calls the thread waits for (the same decision,
 * the results standing for the calls; `tools` are offered to the model on every run). The request's
 * v3 event log is then followed and mapped to AG-UI events (event-mapper.ts). Everything after a
 * valid input is reported in the stream: a refusal before the run (401 NOT_OWNER, 409, ...) is a
 * lone RUN_ERROR carrying our error code.
 */
@Injectable()
export class AgUiRunsService {
  constructor(
    private readonly invoker: StatefulInvokerService,
    private readonly tasks: TaskQueryService,
    private readonly events: TaskEventLogService,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly idempotency: IdempotencyService,
    private readonly replays: IdempotentReplayService,
  ) {}

  /** Runs `input` and sends its events; whatever goes wrong is the stream's RUN_ERROR, never a second response. */
  async serve(agent: AgentDefinition, principal: Principal, input: RunAgentInput, stream: AgUiStream, ctx: RunContext): Promise<void> {
    let mapper: AgUiEventMapper | undefined;
    try {
      const started = await this.idempotency.once(
        ctx.claim,
        () => this.start(agent, principal, input, ctx.claim),
        async (entry): Promise<Started> => ({ request: await this.replays.started(agent, principal, entry) }),
      );
      const { log, after } = await started.request.stream({ bearerToken: ctx.bearerToken, instance: ctx.instance });
      mapper = new AgUiEventMapper({ threadId: input.threadId, runId: input.runId, ...started.request.ids }, started);
      stream.send(mapper.started());
      await this.events.follow(log, after, (e) => mapper!.map(e).forEach((ev) => stream.send(ev)), stream.signal);
      if (stream.signal.aborted) return;
      if (wantsMessagesSnapshot(input) && mapper.terminal?.type === EventType.RUN_FINISHED) {
        const requests = await this.tasks.requests(agent, principal, started.request.ids.task_id);
        stream.send({ type: EventType.MESSAGES_SNAPSHOT, messages: messagesOf(requests) } as BaseEvent);
      }
      stream.send(mapper.terminal ?? mapper.lost());
    } catch (err) {
      // Before RUN_STARTED: a refusal (a lone RUN_ERROR); after it: the run's end.
      const problem = problemOf(err, ctx.instance, this.logger, { task_id: input.threadId });
      stream.send({
        type: EventType.RUN_ERROR,
        message: problem.detail ?? problem.title,
        code: problem.code,
        ...(mapper ? { metadata: mapper.metadata } : {}),
      } as BaseEvent);
    } finally {
      stream.end();
    }
  }

  private async start(agent: AgentDefinition, principal: Principal, input: RunAgentInput, claim?: IdempotencyClaim): Promise<Started> {
    const clientTools = clientToolsOf(input.tools);
    if (input.resume?.length) return this.resume(agent, principal, input, clientTools, claim);
    const turn = turnOf(input.messages);
    if (turn.kind === 'tool-results') return this.toolResults(agent, principal, input, turn.results, clientTools, claim);
    const requestId = await this.requestIdFor(principal, input.runId);
    const request = await this.invoker.start(agent, principal, { task_id: input.threadId, items: turn.items }, { requestId, clientTools, claim });
    return { request };
  }

  /**
   * The results of the client-side tool calls the thread's paused request waits for, paired with
   * them by id: decided as the resume route decides a pause (one compare-and-set), then the run
   * goes on under the same request. Results for calls nothing waits for (already answered, or
   * unknown) are 409 APPROVAL_ALREADY_DECIDED; a missing result is 422. Only a client-side tool's
   * call takes a result: one for a call waiting for approval is 409 NOT_A_CLIENT_TOOL_CALL and
   * leaves the pause open (lifecycle `decide`, the rule of every path that carries results).
   */
  private async toolResults(
    agent: AgentDefinition,
    principal: Principal,
    input: RunAgentInput,
    results: Record<string, string>,
    clientTools: LlmToolSpec[],
    claim?: IdempotencyClaim,
  ): Promise<Started> {
    const ids = Object.keys(results);
    const waiting = await this.tasks.pausedRequest(agent, principal, input.threadId, { callIds: ids });
    if (!waiting)
      throw new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `No tool call of thread ${input.threadId} waits for the results of ${ids.join(', ')}`);
    const pause = waiting.pendingApprovals!;
    const request = await this.invoker.resume(agent, principal, waiting.requestId, { pause_id: pause.pauseId, results }, { clientTools, claim });
    return { request, announced: pause.pending, answered: ids };
  }

  /**
   * The runId becomes the request id when it is a UUID (the v3 routes take request ids as UUIDs);
   * a runId already used is refused (409), not run twice. Any other runId gets a new request id
   * (RUN_STARTED's `metadata.request_id` tells it).
   */
  private async requestIdFor(principal: Principal, runId: string): Promise<string | undefined> {
    if (!UUID.test(runId)) return undefined;
    const runIdLower = runId.toLowerCase();
    if (await this.tasks.requestIdTaken(principal, runIdLower)) {
      throw new DomainError(ErrorCode.VERSION_CONFLICT, `runId ${runId} was already run: every run needs a new runId`);
    }
    return runIdLower;
  }

  /**
   * Decides the pause the entries name, as `POST .../resume/{request_id}` with that `pause_id`
   * does: a pause already decided (a stale or repeated resume) is 409 APPROVAL_ALREADY_DECIDED, an
   * expired one APPROVAL_EXPIRED. The pending calls were announced by the interrupted run.
   */
  private async resume(
    agent: AgentDefinition,
    principal: Principal,
    input: RunAgentInput,
    clientTools: LlmToolSpec[],
    claim?: IdempotencyClaim,
  ): Promise<Started> {
    const decision = resumeDecisionOf(input.resume!);
    const other = input.resume!.find((e) => e.interruptId !== decision.pause_id);
    const target = await this.tasks.pausedRequest(agent, principal, input.threadId, { pauseId: decision.pause_id });
    if (!target || other) {
      const id = other?.interruptId ?? decision.pause_id;
      throw new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `Interrupt ${id} is not open on thread ${input.threadId}`);
    }
    const announced = target.pendingApprovals?.pauseId === decision.pause_id ? target.pendingApprovals.pending : [];
    const request = await this.invoker.resume(agent, principal, target.requestId, decision, { clientTools, claim });
    return { request, announced };
  }
}

/** A started request, and which of its tool calls the client already has (event-mapper.ts). */
interface Started {
  request: StartedRequest;
  announced?: string[];
  answered?: string[];
}

/** MESSAGES_SNAPSHOT is sent on request: `forwardedProps.messagesSnapshot: true`. */
function wantsMessagesSnapshot(input: RunAgentInput): boolean {
  const props = input.forwardedProps as { messagesSnapshot?: unknown } | undefined;
  return props?.messagesSnapshot === true;
}
