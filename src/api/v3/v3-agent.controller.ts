import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res, Type } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG, LOGGER } from '../../app.tokens';
import { CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { toDomainError } from '../../common/errors/to-domain-error';
import { buildProblem } from '../../common/errors/problem-details';
import { ErrorCode } from '../../common/errors/error-code';
import { SseStream } from '../../common/sse/sse-stream';
import { validateBody } from '../../common/validation/validate-body';
import type { EnvConfig } from '../../config/env.config';
import { StateResponse } from '../../tasks/state-response';
import { StatefulInvoker } from '../../tasks/stateful-invoker.service';
import { TaskControlService } from '../../tasks/task-control.service';
import { TaskEventLog } from '../../tasks/task-event-log';
import { TaskStreamReplay } from '../../tasks/task-stream-replay';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, TaskQueryService } from '../../tasks/task-query.service';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { ResumeRequestDto } from './dto/resume-request.dto';
import { UserMessageDto } from './dto/user-message.dto';
import { parsePageSize, parseUuidParam } from './params';

/**
 * The stateful routes of one tealagents/v1alpha1 agent. Thin: parse, then one service call.
 */
export function createV3AgentController(agent: AgentDefinition): Type<unknown> {
  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  class V3AgentController {
    constructor(
      private readonly invoker: StatefulInvoker,
      private readonly tasks: TaskQueryService,
      private readonly control: TaskControlService,
      private readonly events: TaskEventLog,
      private readonly replay: TaskStreamReplay,
      @Inject(ENV_CONFIG) private readonly env: EnvConfig,
      @Inject(LOGGER) private readonly logger: Logger,
    ) {}

    /**
     * 200 with the StateResponse; or, when the task is busy and the agent enqueues
     * (`spec.concurrency.on_busy: enqueue`), 202 with the queued request's ids at once.
     */
    @Post()
    @HttpCode(200)
    async invoke(
      @Body() body: unknown,
      @CurrentPrincipal() principal: Principal,
      @Req() req: Request,
      @Res({ passthrough: true }) res: Response,
    ): Promise<StateResponse | Record<string, string>> {
      const started = await this.invoker.start(agent, principal, validateBody(UserMessageDto, body));
      if (started.queued) {
        res.status(202);
        return { ...started.ids, status: 'Queued' };
      }
      return started.run({ bearerToken: req.bearerToken });
    }

    /**
     * The same invocation streamed. Ownership, 404 and 409 are answered as JSON before the stream
     * opens; after that every event carries `id: {request seq}-{n}` and the task and request ids. A
     * client that disconnects does not cancel the request: its result is persisted either way.
     */
    @Post('sse')
    async sse(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Res() res: Response): Promise<void> {
      const msg = validateBody(UserMessageDto, body);
      const lastEventId = res.req.header('last-event-id');
      if (lastEventId) return this.resumeStream(principal, msg.task_id, lastEventId, res);
      const started = await this.invoker.start(agent, principal, msg);
      const stream = new SseStream(res, this.env.http.sseKeepaliveMs);
      const log = this.events.open(principal.tenantId, started.ids.task_id, started.seq);
      let n = 0;
      const send = (event: string, data: Record<string, unknown>) => {
        const id = `${started.seq}-${n}`;
        this.events.append(log, { id, n: n++, event, data });
        stream.send(event, data, id);
      };
      stream.open();
      if (started.queued) send('queued', { ...started.ids, status: 'Queued' });
      try {
        // A queued request's stream only watches the store: a client leaving stops the watching,
        // never the request.
        const signal = started.queued ? stream.signal : undefined;
        const response = await started.run({ emit: send, bearerToken: res.req.bearerToken, signal });
        send('final-response', { ...response });
      } catch (err) {
        const domain = toDomainError(err);
        const problem = buildProblem(domain?.code ?? ErrorCode.INTERNAL, domain?.message ?? 'Internal error', res.req.originalUrl);
        if (!domain) this.logger.error({ err, task_id: started.ids.task_id }, 'stateful stream failed');
        send('error', { ...problem, ...started.ids });
      } finally {
        this.events.close(log);
        stream.end();
      }
    }

    /** A reconnect (`Last-Event-ID`): what the client missed of that request, then the rest live. */
    private async resumeStream(principal: Principal, taskId: string | undefined, lastEventId: string, res: Response): Promise<void> {
      const replay = await this.replay.prepare(agent, principal, taskId, lastEventId);
      const stream = new SseStream(res, this.env.http.sseKeepaliveMs);
      stream.open();
      try {
        await replay.run((event, data, id) => stream.send(event, data, id), stream.signal);
      } catch (err) {
        const domain = toDomainError(err);
        if (!domain) this.logger.error({ err, task_id: taskId }, 'stream replay failed');
        stream.send('error', { ...buildProblem(domain?.code ?? ErrorCode.INTERNAL, domain?.message ?? 'Internal error', res.req.originalUrl), task_id: taskId });
      } finally {
        stream.end();
      }
    }

    @Post('tasks/:task_id/cancel')
    async cancel(
      @Param('task_id') taskId: string,
      @CurrentPrincipal() principal: Principal,
      @Res({ passthrough: true }) res: Response,
    ): Promise<StateResponse> {
      const { status, body } = await this.control.cancel(agent, principal, parseUuidParam('task_id', taskId));
      res.status(status);
      return body;
    }

    /**
     * Approve or reject the pending tool calls of a paused request (one compare-and-set: of two
     * racing decisions exactly one wins, the other is 409 APPROVAL_ALREADY_DECIDED), then run on
     * under the same request id: 200 with the StateResponse (Completed, or Paused again).
     */
    @Post('tealagents/v1alpha1/resume/:request_id')
    @HttpCode(200)
    async resume(@Param('request_id') requestId: string, @Body() body: unknown, @CurrentPrincipal() principal: Principal, @Req() req: Request) {
      const decision = validateBody(ResumeRequestDto, body);
      const started = await this.invoker.resume(agent, principal, parseUuidParam('request_id', requestId), decision);
      return started.run({ bearerToken: req.bearerToken });
    }

    /**
     * The same, streamed: `approved` and/or `rejected` (the decided call ids), then the events of
     * the rest of the run, ending with `final-response`. Ids continue the request's earlier ones
     * (`{seq}-{k·100000 + n}` for its k-th decision), so they stay monotonic per task.
     */
    @Post('tealagents/v1alpha1/resume/:request_id/sse')
    async resumeSse(@Param('request_id') requestId: string, @Body() body: unknown, @CurrentPrincipal() principal: Principal, @Res() res: Response) {
      const decision = validateBody(ResumeRequestDto, body);
      const started = await this.invoker.resume(agent, principal, parseUuidParam('request_id', requestId), decision);
      const stream = new SseStream(res, this.env.http.sseKeepaliveMs);
      let n = started.decisionCount * 100_000;
      const send = (event: string, data: Record<string, unknown>) => stream.send(event, data, `${started.seq}-${n++}`);
      stream.open();
      try {
        send('final-response', { ...(await started.run({ emit: send, bearerToken: res.req.bearerToken })) });
      } catch (err) {
        const domain = toDomainError(err);
        if (!domain) this.logger.error({ err, task_id: started.ids.task_id }, 'resume stream failed');
        send('error', { ...buildProblem(domain?.code ?? ErrorCode.INTERNAL, domain?.message ?? 'Internal error', res.req.originalUrl), ...started.ids });
      } finally {
        stream.end();
      }
    }

    @Get('tasks/:task_id')
    getTask(@Param('task_id') taskId: string, @CurrentPrincipal() principal: Principal) {
      return this.tasks.getTask(agent, principal, parseUuidParam('task_id', taskId));
    }

    @Get('sessions/:session_id')
    getSession(
      @Param('session_id') sessionId: string,
      @Query('limit') limit: string | undefined,
      @Query('cursor') cursor: string | undefined,
      @CurrentPrincipal() principal: Principal,
    ) {
      return this.tasks.getSession(
        agent,
        principal,
        parseUuidParam('session_id', sessionId),
        parsePageSize(limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
        cursor,
      );
    }
  }
  return named(V3AgentController, `V3AgentController[${agent.source}]`);
}
