import { A2A_VERSION_HEADER, formatSSEErrorEvent, formatSSEEvent } from '@a2a-js/sdk';
import { A2AError } from '@a2a-js/sdk/errors';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG, LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { problemOf } from '../../common/errors/problem-of';
import { SSE_HEADERS, formatSseComment } from '../../common/sse/sse-stream';
import type { EnvConfig } from '../../config/env.config';
import { A2A_LEGACY_VERSION, agentCardOf, baseUrlOf } from './a2a-card.util';
import { A2aCallHandler } from './a2a-call-handler.util';
import { rpcErrorOf } from './a2a-errors.util';
import { A2aStatelessService } from './a2a-stateless.service';
import { A2aTasksService } from './a2a-tasks.service';
import { BEARER_TOKEN } from '../../auth/principal';

type RpcEnvelope = { jsonrpc: string; id: string | number | null; result?: unknown; error?: unknown };

/**
 * `POST /{name}/{version}/a2a`: one JSON-RPC call, parsed and dispatched by the SDK's transport
 * (v1.0 methods with `A2A-Version: 1.0`; the v0.3 ones, `message/send` ..., without the header or
 * with `0.3`) to this call's A2aCallHandler. A plain answer is JSON; a streaming one (`message/stream`,
 * `tasks/resubscribe`) is server-sent events, one JSON-RPC response per `data:` line, with
 * `: keepalive` comments in the silences. An error before the first event is a JSON answer; one
 * after it an `event: error` frame, as the SDK's Express adapter does. Errors carry our code
 * (a2a-errors.ts). The caller was authenticated by the global guard, as on every agent route.
 */
@Injectable()
export class A2aEndpointService {
  constructor(
    private readonly stateful: A2aTasksService,
    private readonly stateless: A2aStatelessService,
    @Inject(ENV_CONFIG) private readonly env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async serve(agent: AgentDefinition, principal: Principal, body: unknown, req: Request, res: Response): Promise<void> {
    const version = req.header(A2A_VERSION_HEADER) || A2A_LEGACY_VERSION;
    const card = agentCardOf(agent, this.env, baseUrlOf(req));
    const aborter = new AbortController();
    res.on('close', () => aborter.abort(new Error('client disconnected')));
    const call = { bearerToken: req[BEARER_TOKEN], instance: req.originalUrl, signal: aborter.signal, keepSlot: req.keepRateLimitSlot };
    const handler = new A2aCallHandler(agent, principal, card, call, this.stateful, this.stateless);
    const id = rpcIdOf(body);
    const context = new ServerCallContext({
      user: { isAuthenticated: true, userName: `${principal.tenantId}/${principal.ownerId}` },
      requestedVersion: version,
    });
    try {
      validateVersion(version, card, 'JSONRPC');
    } catch (err) {
      res.status(200).json({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
      return;
    }
    const transport = version === A2A_LEGACY_VERSION ? new LegacyJsonRpcTransportHandler(handler) : new JsonRpcTransportHandler(handler);
    const out = (await transport.handle(body as Record<string, unknown>, context)) as RpcEnvelope | AsyncGenerator<RpcEnvelope>;
    if (!isAsyncIterable(out)) {
      res.status(200).json(this.withOurError(out, handler, req));
      return;
    }
    await this.stream(out, id, handler, req, res);
  }

  private async stream(out: AsyncGenerator<RpcEnvelope>, id: RpcEnvelope['id'], handler: A2aCallHandler, req: Request, res: Response): Promise<void> {
    const iterator = out[Symbol.asyncIterator]();
    let first: IteratorResult<RpcEnvelope>;
    try {
      first = await iterator.next();
    } catch (err) {
      // Refused before anything ran (not found, busy, a stale pause, a bad message): a plain JSON answer.
      res.status(200).json({ jsonrpc: '2.0', id, error: this.errorOf(err, handler, req) });
      return;
    }
    for (const [k, v] of Object.entries(SSE_HEADERS)) res.setHeader(k, v);
    res.status(200).flushHeaders();
    const keepaliveMs = this.env.http.sseKeepaliveMs;
    let timer: NodeJS.Timeout | undefined;
    const write = (chunk: string) => {
      if (res.writableEnded) return;
      res.write(chunk);
      if (timer) clearTimeout(timer);
      if (keepaliveMs > 0) (timer = setTimeout(() => write(formatSseComment('keepalive')), keepaliveMs)).unref();
    };
    try {
      if (!first.done) write(formatSSEEvent(first.value));
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) write(formatSSEEvent(next.value));
    } catch (err) {
      write(formatSSEErrorEvent({ jsonrpc: '2.0', id, error: this.errorOf(err, handler, req) }));
    } finally {
      if (timer) clearTimeout(timer);
      if (!res.writableEnded) res.end();
    }
  }

  /** The SDK's error envelope replaced by ours when the error was one of ours (A2aCallHandler kept it). */
  private withOurError(out: RpcEnvelope, handler: A2aCallHandler, req: Request): RpcEnvelope {
    if (!out.error || handler.failure === undefined) return out;
    return { ...out, error: this.errorOf(handler.failure, handler, req) };
  }

  /** Ours (kept by the handler) with our code; the SDK's own (A2AError: unsupported, malformed) as the SDK maps them. */
  private errorOf(err: unknown, handler: A2aCallHandler, req: Request) {
    if (handler.failure === undefined && err instanceof A2AError) return JsonRpcTransportHandler.mapToJSONRPCError(err);
    return rpcErrorOf(problemOf(handler.failure ?? err, req.originalUrl, this.logger));
  }
}

function rpcIdOf(body: unknown): RpcEnvelope['id'] {
  const id = body && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function isAsyncIterable(v: unknown): v is AsyncGenerator<RpcEnvelope> {
  return !!v && typeof (v as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}
