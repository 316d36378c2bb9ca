import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { problemOf } from '../../common/errors/problem-of';
import { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import type { ResumeDecision } from '../../tasks/lifecycle/decide';
import type { StartedRequest } from '../../tasks/run/started-request';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import { TaskQueryService } from '../../tasks/task-query.service';
import { responseOf } from '../../tasks/views/request-response';
import type { StateResponse } from '../../tasks/views/state-response';
import { errorResult, PauseFacts, pauseOf, queuedResult, statelessResult, taskResult, ToolResult, turnResult } from './mcp-results.util';

/** How often a tool call waiting on an elicitation looks whether the pause was decided some other way. */
export const PAUSE_POLL_MS = 1000;
/** How often a tool call looks whether a request decided on another replica has ended. */
const OUTCOME_POLL_MS = 250;

/**
 * How the pause is put to the person behind the client: the decision, `elsewhere` (the pause was
 * decided another way meanwhile: `decide`, the REST resume, its expiry), or nothing (declined,
 * canceled, or the client left): the pause then stays open and the result names it.
 */
export type Elicit = (pause: PauseFacts, signal: AbortSignal) => Promise<ResumeDecision | 'elsewhere' | undefined>;

/** One MCP tool call: who calls which agent, and how (`elicit` only when the client declared the capability). */
export interface McpCall {
  agent: AgentDefinition;
  principal: Principal;
  bearerToken?: string;
  /** The request path (problem details' `instance`). */
  instance: string;
  signal: AbortSignal;
  elicit?: Elicit;
}

export interface SendMessageArgs {
  text: string;
  task_id?: string;
  session_id?: string;
}

export interface DecideArgs {
  task_id: string;
  pause_id: string;
  action: 'approve' | 'reject';
  reason?: string;
}

/**
 * The MCP tools (docs/mcp.md) as the operations they stand for: `send_message` is `POST
 * /{name}/{version}` (v3: a turn of the task, or a new one; v1/v2: a stateless call of one user
 * message), `decide` is the resume route with that `pause_id` (the same compare-and-set), `get_task`
 * is `GET /tasks/{task_id}`. Refusals and failures are tool errors carrying our code.
 */
@Injectable()
export class McpToolsService {
  constructor(
    private readonly invoker: StatefulInvokerService,
    private readonly stateless: StatelessInvokerService,
    private readonly tasks: TaskQueryService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  sendMessage(call: McpCall, args: SendMessageArgs): Promise<ToolResult> {
    return this.answered(call, args.task_id, async () => {
      const items = [{ content_type: 'text' as const, content: args.text }];
      if (call.agent.module !== 'v3') return statelessResult(await this.statelessTurn(call, args));
      const started = await this.invoker.start(call.agent, call.principal, { items, task_id: args.task_id, session_id: args.session_id });
      return this.settle(call, started);
    });
  }

  decide(call: McpCall, args: DecideArgs): Promise<ToolResult> {
    return this.answered(call, args.task_id, async () => {
      const paused = await this.tasks.pausedRequest(call.agent, call.principal, args.task_id, { pauseId: args.pause_id });
      if (!paused) throw new DomainError(ErrorCode.APPROVAL_ALREADY_DECIDED, `Pause ${args.pause_id} is not open on task ${args.task_id}`);
      const decision = { action: args.action, pause_id: args.pause_id, ...(args.reason ? { reason: args.reason } : {}) };
      return this.settle(call, await this.invoker.resume(call.agent, call.principal, paused.requestId, decision));
    });
  }

  getTask(call: McpCall, args: { task_id: string }): Promise<ToolResult> {
    return this.answered(call, args.task_id, async () => taskResult(await this.tasks.getTask(call.agent, call.principal, args.task_id)));
  }

  private async statelessTurn(call: McpCall, args: SendMessageArgs) {
    if (call.agent.inputSchema) {
      throw new DomainError(ErrorCode.VALIDATION_FAILED, `${call.agent.source} takes a custom input type (${call.agent.inputType}): call its REST route`, {
        errors: [{ field: 'text', message: 'this agent does not take a plain message' }],
      });
    }
    const input = { session_id: args.session_id, chat_history: [{ role: 'user' as const, items: [{ content_type: 'text' as const, content: args.text }] }] };
    return this.stateless.invoke(call.agent, input, { signal: call.signal, caller: { principal: call.principal, bearerToken: call.bearerToken } });
  }

  /**
   * Runs an admitted request to its outcome. A pause is put to the client as an elicitation when it
   * can answer one (then decided through `resume`, and the run goes on, perhaps to another pause);
   * otherwise, or when nothing is decided, the result names the pause and the `decide` call.
   */
  private async settle(call: McpCall, started: StartedRequest): Promise<ToolResult> {
    let response = await started.run({ bearerToken: call.bearerToken });
    if (!response) return queuedResult(started.ids);
    while (response.status === 'Paused' && call.elicit && !call.signal.aborted) {
      const pause = pauseOf(response);
      const decision = await call.elicit(pause, call.signal);
      if (decision === undefined) break;
      if (decision === 'elsewhere') response = await this.outcomeOf(call, pause);
      else response = await this.resumed(call, pause.request_id, decision);
    }
    return turnResult(response);
  }

  /** Decides the pause and runs the request on (a resumed request is never queued: it has an answer). */
  private async resumed(call: McpCall, requestId: string, decision: ResumeDecision): Promise<StateResponse> {
    const started = await this.invoker.resume(call.agent, call.principal, requestId, decision);
    return (await started.run({ bearerToken: call.bearerToken }))!;
  }

  /** The outcome of a request whose pause was decided elsewhere (another replica runs it): read until it ends or pauses again. */
  private async outcomeOf(call: McpCall, pause: PauseFacts): Promise<StateResponse> {
    for (;;) {
      const requests = await this.tasks.requests(call.agent, call.principal, pause.task_id);
      const request = requests.find((r) => r.requestId === pause.request_id);
      if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `No request ${pause.request_id}`);
      const open =
        request.status === 'Running' || request.status === 'Queued' || (request.status === 'Paused' && request.pendingApprovals?.pauseId === pause.pause_id);
      if (!open) return responseOf(call.agent, request);
      await sleep(OUTCOME_POLL_MS, undefined, { signal: call.signal });
    }
  }

  /**
   * Resolves `elsewhere` once `pause` is no longer open (decided by `decide`, the REST resume, the
   * console or an elicitation answer that reached another replica; expired; its task deleted),
   * read every PAUSE_POLL_MS; undefined when `signal` aborts first. A read that fails is tried again.
   */
  async watchPause(agent: AgentDefinition, principal: Principal, pause: PauseFacts, signal: AbortSignal): Promise<'elsewhere' | undefined> {
    while (!signal.aborted) {
      await sleep(PAUSE_POLL_MS, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) break;
      try {
        const request = await this.tasks.pausedRequest(agent, principal, pause.task_id, { pauseId: pause.pause_id });
        if (request?.status !== 'Paused' || request.pendingApprovals?.pauseId !== pause.pause_id) return 'elsewhere';
      } catch (err) {
        if (err instanceof DomainError && err.code === ErrorCode.TASK_NOT_FOUND) return 'elsewhere';
      }
    }
    return undefined;
  }

  /** Runs one tool, turning whatever it throws into a tool error with our code. */
  private async answered(call: McpCall, taskId: string | undefined, run: () => Promise<ToolResult>): Promise<ToolResult> {
    try {
      return await run();
    } catch (err) {
      return errorResult(problemOf(err, call.instance, this.logger, taskId ? { task_id: taskId } : {}));
    }
  }
}
