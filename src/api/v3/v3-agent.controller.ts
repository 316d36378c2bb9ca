import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Req, Res, Type } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG } from '../../app.tokens';
import { CallerRoles, CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { validateBody } from '../../common/validation/validate-body';
import type { EnvConfig } from '../../config/env.config';
import { RateLimited } from '../../rate-limit/rate-limit.guard';
import { StateResponse } from '../../tasks/views/state-response';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import type { StartedRequest } from '../../tasks/run/started-request';
import { TaskAuditService } from '../../tasks/archive/task-audit.service';
import { SessionListService } from '../../tasks/session-list.service';
import { TaskCancelService } from '../../tasks/task-cancel.service';
import { TaskDeletionService } from '../../tasks/task-deletion.service';
import { includesSuperseded } from '../../tasks/views/task-edits-view';
import { TaskEditsService } from '../../tasks/task-edits.service';
import { TaskEventLogService } from '../../tasks/events/task-event-log.service';
import { Attached, parseEventId, TaskStreamAttachService } from '../../tasks/reattach/task-stream-attach.service';
import { TaskStreamReplayService } from '../../tasks/reattach/task-stream-replay.service';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, TaskQueryService } from '../../tasks/task-query.service';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { idempotencyClaim } from '../common/idempotency-key';
import { ForkRequestDto } from './dto/fork-request.dto';
import { ResumeRequestDto } from './dto/resume-request.dto';
import { readUserMessage } from './dto/user-message.read';
import { parseClientIdParam } from './client-id';
import { parsePageSize, parseUuidParam } from './params';
import { resumeResponseOf } from './resume-response';
import { sendEventStream } from './v3-event-stream';
import { BEARER_TOKEN } from '../../auth/principal';

/** `Prefer: respond-async` among the request's preferences (RFC 7240: comma-separated, case-insensitive, parameters after `;` or `=`). */
function respondAsync(req: Request): boolean {
  const prefer = req.header('prefer');
  return !!prefer && prefer.split(',').some((p) => p.split(/[;=]/)[0]!.trim().toLowerCase() === 'respond-async');
}

/** A task timeline's page: 500 events unless `limit` says otherwise (at most 1000). */
const TIMELINE_PAGE = 500;
const MAX_TIMELINE_PAGE = 1000;

/**
 * The stateful routes of one tealagents/v1alpha1 agent. Thin: parse, then one service call.
 */
export function createV3AgentController(agent: AgentDefinition): Type<unknown> {
  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  class V3AgentController {
    constructor(
      private readonly invoker: StatefulInvokerService,
      private readonly tasks: TaskQueryService,
      private readonly control: TaskCancelService,
      private readonly edits: TaskEditsService,
      private readonly events: TaskEventLogService,
      private readonly replay: TaskStreamReplayService,
      @Inject(ENV_CONFIG) private readonly env: EnvConfig,
      private readonly deletion: TaskDeletionService,
      private readonly sessions: SessionListService,
      private readonly attach: TaskStreamAttachService,
      private readonly audit: TaskAuditService,
    ) {}

    /**
     * 200 with the StateResponse; or, when the task is busy and the agent enqueues
     * (`spec.concurrency.on_busy: enqueue`), 202 with the queued request's ids at once.
     */
    @Post()
    @HttpCode(200)
    @RateLimited()
    async invoke(
      @Body() body: unknown,
      @CurrentPrincipal() principal: Principal,
      @Req() req: Request,
      @Res({ passthrough: true }) res: Response,
    ): Promise<StateResponse | Record<string, string> | undefined> {
      const claim = idempotencyClaim(req, principal, agent, 'turn', body);
      const started = await this.invoker.start(agent, principal, readUserMessage(body), { claim });
      if (respondAsync(req)) return this.accepted(started, req, res);
      const response = await started.run({ bearerToken: req[BEARER_TOKEN] });
      if (!started.queued) return response;
      res.status(202);
      return { ...started.ids, status: 'Queued' };
    }

    /**
     * `Prefer: respond-async` (RFC 7240; docs/api.md, Background runs): 202 at once with the
     * request's ids, `Location` the task and `Preference-Applied`; the run goes on here as a streamed
     * run does (its lease, cancel, approvals, its events in the stream log), so `GET` the task or
     * reattach to its stream (`GET …/tasks/{id}/stream`) to follow it. A request that waits its turn
     * (`on_busy: enqueue`) is `Queued`, as without the header.
     */
    private async accepted(started: StartedRequest, req: Request, res: Response): Promise<Record<string, string>> {
      if (started.replayed) {
        // A repeat (Idempotency-Key): the first copy's run goes on; it is answered where it stands.
        res.status(202).setHeader('Location', `${agent.prefix}/tasks/${started.ids.task_id}`).setHeader('Preference-Applied', 'respond-async');
        return { ...started.ids, status: started.replayed.status };
      }
      if (started.queued) await started.run({ bearerToken: req[BEARER_TOKEN] });
      else {
        // The caller's concurrency slot (spec.limits) stays taken until the run ends, not just its answer.
        const release = req.keepRateLimitSlot?.();
        try {
          const { log, after } = await started.stream({ bearerToken: req[BEARER_TOKEN], instance: req.originalUrl });
          if (release) void this.events.follow(log, after, () => undefined, new AbortController().signal).then(release);
        } catch (err) {
          release?.();
          throw err;
        }
      }
      res.status(202).setHeader('Location', `${agent.prefix}/tasks/${started.ids.task_id}`).setHeader('Preference-Applied', 'respond-async');
      return { ...started.ids, status: started.queued ? 'Queued' : 'Running' };
    }

    /**
     * The same invocation streamed (src/api/v3/v3-event-stream.ts). Ownership, 404, 409 and 422 are
     * answered as JSON before the stream opens. With `Last-Event-ID`, a reconnect, answered as `GET
     * tasks/{task_id}/stream` with that id is: what the client missed of that request, then the rest
     * live; 204 once it has seen the outcome. A client that disconnects does not cancel.
     */
    @Post('sse')
    @RateLimited({ reconnectsFree: true })
    async sse(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Res() res: Response): Promise<void> {
      const msg = readUserMessage(body);
      const lastEventId = res.req.header('last-event-id');
      if (lastEventId) return this.reattached(res, await this.replay.prepare(agent, principal, msg.task_id, lastEventId));
      const started = await this.invoker.start(agent, principal, msg, { claim: idempotencyClaim(res.req, principal, agent, 'turn', body) });
      const { log, after } = await started.stream({ bearerToken: res.req[BEARER_TOKEN], instance: res.req.originalUrl });
      return sendEventStream(res, this.events, log, after, this.env.http.sseKeepaliveMs);
    }

    @Post('tasks/:task_id/cancel')
    async cancel(
      @Param('task_id') taskId: string,
      @CurrentPrincipal() principal: Principal,
      @Res({ passthrough: true }) res: Response,
    ): Promise<StateResponse> {
      const id = parseClientIdParam('task_id', taskId);
      const { kind, body } = await this.control.cancel(agent, principal, id, idempotencyClaim(res.req, principal, agent, 'cancel', res.req.body));
      res.status(kind === 'canceled' ? 200 : 202);
      return body;
    }

    /**
     * Approve or reject the pending tool calls of a paused request (one compare-and-set: of two
     * racing decisions exactly one wins, the other is 409 APPROVAL_ALREADY_DECIDED), then run on
     * under the same request id. The body may be empty: `approval_url`/`rejection_url` POSTed as
     * given decide by their `action` and `pause_id` queries. Answers upstream's body (resume-response.ts).
     */
    @Post('tealagents/v1alpha1/resume/:request_id')
    @HttpCode(200)
    @RateLimited()
    async resume(
      @Param('request_id') requestId: string,
      @Body() body: unknown,
      @Query() query: Record<string, unknown>,
      @CurrentPrincipal() principal: Principal,
      @Req() req: Request,
      @Res({ passthrough: true }) res: Response,
    ) {
      const claim = idempotencyClaim(req, principal, agent, 'resume', body);
      const started = await this.invoker.resume(agent, principal, parseUuidParam('request_id', requestId), resumeDecision(body, query), { claim });
      // A decision that rejected every call has nothing left to run: its answer is at hand.
      if (respondAsync(req) && !started.finished) return this.accepted(started, req, res);
      const response = await started.run({ bearerToken: req[BEARER_TOKEN] });
      return response && resumeResponseOf(response);
    }

    /** The same, streamed: `approved` and/or `rejected` (the decided call ids), then the rest of the run. */
    @Post('tealagents/v1alpha1/resume/:request_id/sse')
    @RateLimited()
    async resumeSse(
      @Param('request_id') requestId: string,
      @Body() body: unknown,
      @Query() query: Record<string, unknown>,
      @CurrentPrincipal() principal: Principal,
      @Res() res: Response,
    ) {
      const claim = idempotencyClaim(res.req, principal, agent, 'resume', body);
      const started = await this.invoker.resume(agent, principal, parseUuidParam('request_id', requestId), resumeDecision(body, query), { claim });
      const { log, after } = await started.stream({ bearerToken: res.req[BEARER_TOKEN], instance: res.req.originalUrl });
      return sendEventStream(res, this.events, log, after, this.env.http.sseKeepaliveMs);
    }

    /** Superseded requests (replaced by an edit) are listed only with `?include=superseded`. */
    @Get('tasks/:task_id')
    getTask(@Param('task_id') taskId: string, @Query('include') include: string | undefined, @CurrentPrincipal() principal: Principal) {
      return this.tasks.getTask(agent, principal, parseClientIdParam('task_id', taskId), includesSuperseded(include));
    }

    /** The task's timeline (docs/archive.md): its owner's or an auditor's, also after the task was deleted, when the archive keeps it. */
    @Get('tasks/:task_id/events')
    timeline(
      @Param('task_id') taskId: string,
      @Query('limit') limit: string | undefined,
      @Query('cursor') cursor: string | undefined,
      @CurrentPrincipal() principal: Principal,
      @CallerRoles() roles: readonly string[],
    ) {
      const page = { limit: parsePageSize(limit, TIMELINE_PAGE, MAX_TIMELINE_PAGE), ...(cursor !== undefined ? { cursor } : {}) };
      return this.audit.timeline(agent, principal, roles, parseClientIdParam('task_id', taskId), page);
    }

    /** The task's plans with their status and timings (docs/archive.md), read from the archive once the task is gone. */
    @Get('tasks/:task_id/plans')
    plans(@Param('task_id') taskId: string, @CurrentPrincipal() principal: Principal, @CallerRoles() roles: readonly string[]) {
      return this.audit.plans(agent, principal, roles, parseClientIdParam('task_id', taskId));
    }

    /**
     * Reattach to the task's stream (src/tasks/reattach/task-stream-attach.service.ts): the current or last request's
     * events after `Last-Event-ID` (the header wins over `?last_event_id=`, which a browser
     * `EventSource` needs on its first connect), then live, then closed with the final event.
     * 204 when the request has ended and the id is its outcome's (docs/api.md, Streaming), on any replica.
     */
    @Get('tasks/:task_id/stream')
    async stream(
      @Param('task_id') taskId: string,
      @Query('last_event_id') lastEventId: unknown,
      @CurrentPrincipal() principal: Principal,
      @Res() res: Response,
    ): Promise<void> {
      const id = res.req.header('last-event-id') ?? (lastEventId === undefined ? undefined : typeof lastEventId === 'string' ? lastEventId : '');
      const position = id === undefined ? undefined : parseEventId(id);
      return this.reattached(res, await this.attach.attach(agent, principal, parseClientIdParam('task_id', taskId), position));
    }

    /** A reattach's answer, on both routes: 204 once the client has seen the outcome, else the stream. */
    /** The edit both routes start (its ids and message read as every route reads them), run or streamed by the caller. */
    private startEdit(principal: Principal, taskId: string, requestId: string, body: unknown, req: Request) {
      const task = parseClientIdParam('task_id', taskId);
      const claim = idempotencyClaim(req, principal, agent, 'edit', body);
      return this.edits.edit(agent, principal, task, parseUuidParam('request_id', requestId), readUserMessage(body), claim);
    }

    private reattached(res: Response, attached: Attached): Promise<void> | void {
      if (attached.kind === 'ended') {
        res.status(204).end();
        return;
      }
      return sendEventStream(res, this.events, attached.log, attached.after, this.env.http.sseKeepaliveMs).finally(attached.release);
    }

    /** Edit and rerun (src/tasks/task-edits.service.ts): answers as `POST ""` does, under the new request id. */
    @Post('tasks/:task_id/requests/:request_id/edit')
    @HttpCode(200)
    @RateLimited()
    async edit(
      @Param('task_id') taskId: string,
      @Param('request_id') requestId: string,
      @Body() body: unknown,
      @CurrentPrincipal() principal: Principal,
      @Req() req: Request,
    ) {
      const started = await this.startEdit(principal, taskId, requestId, body, req);
      return started.run({ bearerToken: req[BEARER_TOKEN] });
    }

    /** The same, streamed as `POST /sse` is. */
    @Post('tasks/:task_id/requests/:request_id/edit/sse')
    @RateLimited()
    async editSse(
      @Param('task_id') taskId: string,
      @Param('request_id') requestId: string,
      @Body() body: unknown,
      @CurrentPrincipal() principal: Principal,
      @Res() res: Response,
    ) {
      const started = await this.startEdit(principal, taskId, requestId, body, res.req);
      const { log, after } = await started.stream({ bearerToken: res.req[BEARER_TOKEN], instance: res.req.originalUrl });
      return sendEventStream(res, this.events, log, after, this.env.http.sseKeepaliveMs);
    }

    /** 201 with the new task's view; the source is untouched. */
    @Post('tasks/:task_id/fork')
    @HttpCode(201)
    fork(@Param('task_id') taskId: string, @Body() body: unknown, @CurrentPrincipal() principal: Principal, @Req() req: Request) {
      const claim = idempotencyClaim(req, principal, agent, 'fork', body);
      return this.edits.fork(agent, principal, parseClientIdParam('task_id', taskId), validateBody(ForkRequestDto, body ?? {}), claim);
    }

    /** 204 once nothing of the task is left (src/tasks/task-deletion.service.ts). */
    @Delete('tasks/:task_id')
    @HttpCode(204)
    async deleteTask(@Param('task_id') taskId: string, @CurrentPrincipal() principal: Principal, @Req() req: Request): Promise<void> {
      const claim = idempotencyClaim(req, principal, agent, 'delete', undefined);
      await this.deletion.deleteTask(agent, principal, parseClientIdParam('task_id', taskId), claim);
    }

    /** 204 once nothing is left of the caller's tasks of this agent in the session. */
    @Delete('sessions/:session_id')
    @HttpCode(204)
    async deleteSession(@Param('session_id') sessionId: string, @CurrentPrincipal() principal: Principal): Promise<void> {
      await this.deletion.deleteSession(agent, principal, parseClientIdParam('session_id', sessionId));
    }

    /** The caller's sessions with this agent, newest activity first (src/tasks/session-list.service.ts). */
    @Get('sessions')
    listSessions(@Query('limit') limit: string | undefined, @Query('cursor') cursor: string | undefined, @CurrentPrincipal() principal: Principal) {
      return this.sessions.listSessions(agent, principal, parsePageSize(limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE), cursor);
    }

    @Get('sessions/:session_id')
    getSession(
      @Param('session_id') sessionId: string,
      @Query('limit') limit: string | undefined,
      @Query('cursor') cursor: string | undefined,
      @CurrentPrincipal() principal: Principal,
    ) {
      return this.sessions.getSession(
        agent,
        principal,
        parseClientIdParam('session_id', sessionId),
        parsePageSize(limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
        cursor,
      );
    }
  }
  return named(V3AgentController, `V3AgentController[${agent.source}]`);
}

/** The decision: the body's fields, with the URL's `action`/`pause_id` filling in what it leaves out. */
function resumeDecision(body: unknown, query: Record<string, unknown>): ResumeRequestDto {
  const given = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const merged = { ...given };
  for (const key of ['action', 'pause_id'] as const) if (merged[key] === undefined && typeof query[key] === 'string') merged[key] = query[key];
  return validateBody(ResumeRequestDto, merged);
}
