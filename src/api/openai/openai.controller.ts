import { Body, Controller, Get, HttpCode, Param, Post, Req, Res, Type, UseFilters } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AgentOfRequest } from '../../agents/agent-route.metadata';
import { agentAccessOverride } from '../../auth/auth.guard';
import { Authenticator } from '../../auth/authenticator';
import { CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RateLimited } from '../../rate-limit/rate-limit.guard';
import { named } from '../common/agent-route';
import { readChatRequest } from './chat-request.util';
import { ModelCatalog, ModelEntry } from './model-catalog.util';
import { ChatCompletionsService } from './chat-completions.service';
import { OpenAiErrorFilter } from './openai-error.filter';
import { modelNotFound } from './openai-error.util';

/**
 * The OpenAI-compatible routes (docs/openai.md). Not under an agent's prefix: the agent is the
 * body's `model`, which AgentOfRequest hands to the global auth guard (the agent's `spec.auth`),
 * the rate-limit guard (its `spec.limits`) and the telemetry interceptor, exactly as an agent's
 * own routes get them. Errors are OpenAI's shape (OpenAiErrorFilter). Thin: parse, then one call.
 */
export function createOpenAiController(catalog: ModelCatalog): Type<unknown> {
  @Controller('openai/v1')
  @AgentOfRequest((req) => catalog.named((req.body as { model?: unknown } | undefined)?.model))
  @UseFilters(OpenAiErrorFilter)
  class OpenAiController {
    constructor(
      private readonly completions: ChatCompletionsService,
      private readonly authenticator: Authenticator,
    ) {}

    /** The agents the caller may call: those whose `spec.auth` (if any) its token satisfies. */
    @Get('models')
    async models(@Req() req: Request): Promise<{ object: 'list'; data: ModelEntry[] }> {
      const data: ModelEntry[] = [];
      for (const agent of catalog.agents) if (await this.mayCall(req, agent)) data.push(catalog.entryOf(agent));
      return { object: 'list', data };
    }

    @Get('models/:model')
    async model(@Param('model') model: string, @Req() req: Request): Promise<ModelEntry> {
      const agent = catalog.named(model);
      if (!agent || !(await this.mayCall(req, agent))) throw modelNotFound(model);
      return catalog.entryOf(agent);
    }

    @Post('chat/completions')
    @HttpCode(200)
    @RateLimited()
    async complete(@Body() body: unknown, @CurrentPrincipal() principal: Principal, @Req() req: Request, @Res() res: Response): Promise<void> {
      const chat = readChatRequest(body);
      const agent = catalog.named(chat.model);
      if (!agent) throw modelNotFound(chat.model);
      if (chat.stream) return this.completions.stream(agent, principal, chat, { req, res });
      res.json(await this.completions.complete(agent, principal, chat, { req, res }));
    }

    /**
     * The guard checked the server-wide requirements; an agent with its own `spec.auth` is listed
     * when the caller's token also meets those (a 403 of that check only hides it).
     */
    private async mayCall(req: Request, agent: (typeof catalog.agents)[number]): Promise<boolean> {
      const override = agentAccessOverride(agent);
      if (!override) return true;
      try {
        await this.authenticator.authenticate(req, override);
        return true;
      } catch (err) {
        if (err instanceof DomainError && err.code === ErrorCode.FORBIDDEN) return false;
        throw err;
      }
    }
  }
  return named(OpenAiController, 'OpenAiController');
}
