import { Body, Controller, HttpCode, Inject, Post, Res, Type } from '@nestjs/common';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG, LOGGER } from '../../app.tokens';
import { CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { SseStream } from '../../common/sse/sse-stream';
import type { EnvConfig } from '../../config/env.config';
import { InvokeResponse } from '../../invocation/invoke-response';
import type { StatelessInput } from '../../invocation/stateless-input';
import { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import { llmFailureLogFields } from '../../llm/llm-failure-log';
import { RateLimited } from '../../rate-limit/rate-limit.guard';
import { AgentRoute, controllerPath, named } from '../common/agent-route';
import { parseStatelessInput } from '../common/parse-stateless-input';
import { abortOnDisconnect } from './abort-on-disconnect';
import { BEARER_TOKEN } from '../../auth/principal';

/**
 * The stateless routes of one v1/v2alpha1 agent: `POST /{name}/{version}` and `POST .../sse`.
 * Generated per agent so each is served at its own prefix; the work is done by StatelessInvokerService.
 */
export function createStatelessAgentController(agent: AgentDefinition): Type<unknown> {
  @Controller(controllerPath(agent))
  @AgentRoute(agent)
  class StatelessAgentController {
    constructor(
      private readonly invoker: StatelessInvokerService,
      @Inject(ENV_CONFIG) private readonly env: EnvConfig,
      @Inject(LOGGER) private readonly logger: Logger,
    ) {}

    @Post()
    @HttpCode(200)
    @RateLimited()
    async invoke(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Res({ passthrough: true }) res: Response): Promise<InvokeResponse> {
      const input = parseInput(agent, body);
      try {
        return await this.invoker.invoke(agent, input, { signal: abortOnDisconnect(res), caller: { principal, bearerToken: res.req[BEARER_TOKEN] } });
      } catch (err) {
        this.logFailure(err);
        throw err;
      }
    }

    @Post('sse')
    @RateLimited()
    async sse(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Res() res: Response): Promise<void> {
      const input = parseInput(agent, body); // a bad body is a JSON 422, before the stream opens
      const stream = new SseStream(res, this.env.http.sseKeepaliveMs);
      // Headers go out with the first event or keepalive, so an early failure keeps its status.
      stream.start();
      try {
        await this.invoker.invoke(agent, input, {
          signal: stream.signal,
          emit: (e) => stream.send(e.event, e.data),
          caller: { principal, bearerToken: res.req[BEARER_TOKEN] },
        });
        stream.end();
      } catch (err) {
        this.logFailure(err);
        if (!stream.isOpen) {
          // The client left; its model call was aborted with it. Nothing to send.
          this.logger.info({ agent: agent.source }, 'stateless stream abandoned by the client');
          return;
        }
        // Not started: the filter answers with a plain problem+json. Started: as an `event: error` frame.
        stream.release();
        throw err;
      }
    }

    private logFailure(err: unknown): void {
      const fields = llmFailureLogFields(err);
      if (fields) this.logger.warn({ agent: agent.source, ...fields }, 'model provider call failed');
    }
  }
  return named(StatelessAgentController, `StatelessAgentController[${agent.source}]`);
}

/** The body of every stateless route (`POST`, `/sse`, and the `/stream` socket's first message). */
export function parseInput(agent: AgentDefinition, body: unknown): StatelessInput {
  return parseStatelessInput(agent, body);
}
