import { Inject, Injectable } from '@nestjs/common';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import { elicitationTarget, McpElicitationsService } from './mcp-elicitations.service';
import { decisionOfElicitation, elicitationOf } from './mcp-results.util';
import { sessionElicits, sessionIdFor } from './mcp-session.util';
import { registerAgentTools } from './agent-tools.util';
import { Elicit, McpCall, McpToolsService } from './mcp-tools.service';
import { BEARER_TOKEN } from '../../auth/principal';

type JsonRpcMessage = Record<string, unknown>;

/**
 * One HTTP request of the MCP endpoint (`POST /{name}/{version}/mcp`), served statelessly: a new
 * McpServer and transport for each request (the SDK's stateless mode), so any replica serves any
 * request: tasks live in the state store, and the session id carries only the client's declared
 * elicitation capability (mcp-session.util.ts). The client's answers to our elicitations are
 * POSTs of their own, taken here before any transport: handed to the tool call waiting for them
 * on this replica, or, when none waits here, decided on this replica from the pause their id names.
 */
@Injectable()
export class McpEndpointService {
  constructor(
    private readonly tools: McpToolsService,
    private readonly elicitations: McpElicitationsService,
    private readonly invoker: StatefulInvokerService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async serve(agent: AgentDefinition, principal: Principal, req: Request, res: Response, body: unknown): Promise<void> {
    if (await this.answers(agent, principal, req[BEARER_TOKEN], body)) {
      res.status(202).end();
      return;
    }
    const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js') as typeof import('@modelcontextprotocol/sdk/server/mcp.js');
    const { StreamableHTTPServerTransport } =
      require('@modelcontextprotocol/sdk/server/streamableHttp.js') as typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js');
    const server: McpServer = new McpServer({ name: agent.name, version: agent.version }, { instructions: agent.description ?? undefined });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const elicits = sessionElicits(req.header('mcp-session-id'));
    registerAgentTools(server, agent, this.tools, (signal, relatedRequestId): McpCall => ({
      agent,
      principal,
      bearerToken: req[BEARER_TOKEN],
      instance: req.originalUrl,
      signal,
      elicit: elicits && agent.module === 'v3' ? this.elicitVia(transport, relatedRequestId, agent, principal) : undefined,
    }));
    res.on('close', () => void server.close().catch(() => undefined));
    const initialize = messages(body).find((m) => m.method === 'initialize');
    if (initialize) res.setHeader('Mcp-Session-Id', sessionIdFor(initialize.params));
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  /**
   * Sends the pause to the client as `elicitation/create` on the tool call's own stream and waits
   * for its answer, or for the pause to be decided another way (McpToolsService.watchPause).
   */
  private elicitVia(transport: StreamableHTTPServerTransport, relatedRequestId: string | number, agent: AgentDefinition, principal: Principal): Elicit {
    return async (pause, signal) => {
      const { id, answer, close } = this.elicitations.open(principal, { requestId: pause.request_id, pauseId: pause.pause_id });
      const stop = new AbortController();
      const stopped = AbortSignal.any([signal, stop.signal]);
      try {
        await transport.send({ jsonrpc: '2.0', id, method: 'elicitation/create', params: elicitationOf(pause) }, { relatedRequestId });
        const outcome = await Promise.race([answer.then((a) => ({ answer: a })), this.tools.watchPause(agent, principal, pause, stopped)]);
        if (outcome === 'elsewhere') return 'elsewhere';
        return outcome ? decisionOfElicitation(outcome.answer, pause.pause_id) : undefined;
      } finally {
        stop.abort();
        close();
      }
    };
  }

  /**
   * A POST that carries only answers to our elicitations (JSON-RPC responses with our ids): each
   * goes to the tool call waiting for it here; one nobody here waits for is decided here (the
   * same resume, its run in the background), so an answer that reaches another replica is not lost.
   */
  private async answers(agent: AgentDefinition, principal: Principal, bearerToken: string | undefined, body: unknown): Promise<boolean> {
    const all = messages(body);
    if (!all.length || !all.every((m) => m.method === undefined && elicitationTarget(m.id) && ('result' in m || 'error' in m))) return false;
    for (const m of all) {
      if (this.elicitations.deliver(principal, m.id as string, m.result)) continue;
      const target = elicitationTarget(m.id)!;
      const decision = decisionOfElicitation(m.result, target.pauseId);
      if (!decision) continue;
      try {
        const started = await this.invoker.resume(agent, principal, target.requestId, decision);
        void started
          .run({ bearerToken })
          .catch((err: unknown) => this.logger.warn({ err, request_id: target.requestId }, 'MCP elicitation answer: the resumed run failed'));
      } catch (err) {
        this.logger.info({ err, request_id: target.requestId, pause_id: target.pauseId }, 'MCP elicitation answer not applied');
      }
    }
    return true;
  }
}

/** The JSON-RPC messages of a body (one, or a batch). */
function messages(body: unknown): JsonRpcMessage[] {
  const list = Array.isArray(body) ? body : [body];
  return list.filter((m): m is JsonRpcMessage => typeof m === 'object' && m !== null && !Array.isArray(m));
}
