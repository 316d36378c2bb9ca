import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG, LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import type { EnvConfig } from '../../config/env.config';
import { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import { TaskEventLogService } from '../../tasks/events/task-event-log.service';
import { TaskStreamAttachService } from '../../tasks/reattach/task-stream-attach.service';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import { TaskCancelService } from '../../tasks/task-cancel.service';
import { TaskQueryService } from '../../tasks/task-query.service';
import type { A2aEndpointService } from './a2a-endpoint.service';

/**
 * What the A2A routes call: the endpoint and the card, built on the first A2A call. The `@a2a-js/sdk`
 * package (and `jose`, which its index loads) is required then, not at boot: a server whose
 * clients never speak A2A loads none of it (test/e2e/boot-footprint.e2e-spec.ts), as the MCP SDK.
 */
@Injectable()
export class A2aGatewayService {
  private endpoint?: A2aEndpointService;

  constructor(
    private readonly invoker: StatefulInvokerService,
    private readonly tasks: TaskQueryService,
    private readonly control: TaskCancelService,
    private readonly events: TaskEventLogService,
    private readonly attach: TaskStreamAttachService,
    private readonly stateless: StatelessInvokerService,
    @Inject(ENV_CONFIG) private readonly env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  serve(agent: AgentDefinition, principal: Principal, body: unknown, req: Request, res: Response): Promise<void> {
    return this.loaded().serve(agent, principal, body, req, res);
  }

  /** The agent's card as JSON, with the URL the caller reached the server by. */
  card(agent: AgentDefinition, req: Request): unknown {
    const { agentCardJson, agentCardOf, baseUrlOf } = require('./a2a-card.util') as typeof import('./a2a-card.util');
    return agentCardJson(agentCardOf(agent, this.env, baseUrlOf(req)));
  }

  private loaded(): A2aEndpointService {
    if (this.endpoint) return this.endpoint;
    const { A2aEndpointService } = require('./a2a-endpoint.service') as typeof import('./a2a-endpoint.service');
    const { A2aTasksService } = require('./a2a-tasks.service') as typeof import('./a2a-tasks.service');
    const { A2aStatelessService } = require('./a2a-stateless.service') as typeof import('./a2a-stateless.service');
    const stateful = new A2aTasksService(this.invoker, this.tasks, this.control, this.events, this.attach);
    this.endpoint = new A2aEndpointService(stateful, new A2aStatelessService(this.stateless), this.env, this.logger);
    return this.endpoint;
  }
}
