import { BeforeApplicationShutdown, Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { context } from '@opentelemetry/api';
import type { Express, Request } from 'express';
import { once } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { AGENTS, ENV_CONFIG, LOGGER, TELEMETRY } from '../../app.tokens';
import { agentAccessOverride, auditRefusal } from '../../auth/auth.guard';
import { Authenticator } from '../../auth/authenticator';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { problemOf } from '../../common/errors/problem-of';
import { toDomainError } from '../../common/errors/to-domain-error';
import { requestIdFor } from '../../common/http/request-id.middleware';
import { AuditLog } from '../../common/logging/audit-log';
import { callerFields } from '../../common/logging/log-context';
import type { EnvConfig } from '../../config/env.config';
import { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import { RateLimiter } from '../../rate-limit/rate-limiter.service';
import type { ToolCaller } from '../../invocation/tool-loop';
import { Telemetry } from '../../telemetry/telemetry';
import { UpgradeRequestTelemetry } from '../../telemetry/upgrade-request-telemetry';
import { refuseUpgrade } from './refuse-upgrade.util';
import { SocketsPerCaller } from './sockets-per-caller';
import { CloseCode } from './stream-socket-close.util';
import { StreamSocketSession } from './stream-socket.session';
import { pathOf } from '../../common/http/url-path';
import { BEARER_TOKEN } from '../../auth/principal';

/** How long open sockets get to finish their closing handshake when the app shuts down. */
const SHUTDOWN_GRACE_MS = 1000;

/**
 * `/{name}/{version}/stream` of v1/v2alpha1 agents: upstream's deprecated WebSocket route, served
 * because the Assistant Orchestrator streams from it. v3 agents have none (upstream's AppV3 mounts
 * no WebSocket route). Express never sees an upgrade, so this listens to the HTTP server's `upgrade`
 * event and applies, before switching protocols, what the guard applies to `POST /sse`: the caller
 * is authenticated from the `Authorization` header (dev mode or an Entra ID bearer token, with the
 * agent's `spec.auth`), and a refusal is an ordinary HTTP answer (401/403/503 problem+json with its
 * `WWW-Authenticate`), never an open socket. An upgrade to any other path is a 404.
 *
 * Messages are limited to TA_MAX_BODY_BYTES (`ws` closes with 1009 beyond it); the session
 * (StreamSocketSession) does the rest through the same StatelessInvokerService streaming path as `/sse`.
 *
 * An open socket holds an identity checked once, at the upgrade, so it is bounded: its input must
 * come within TA_WS_FIRST_MESSAGE_MS (else 1008 `INPUT_TIMEOUT`), input that comes after
 * the caller's token stopped being accepted is refused (1008 `UNAUTHENTICATED`, audited as
 * `auth.failed`), and a caller holds at most TA_WS_MAX_SOCKETS_PER_CALLER sockets on this replica
 * at once (one more is closed at once with 1013 `TOO_MANY_STREAMS`).
 */
@Injectable()
export class StreamSocketGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly routes = new Map<string, AgentDefinition>();
  /** Made on the first upgrade to a `/stream` route: a server without one never loads `ws`. */
  private wss?: WebSocketServer;
  /** Headers for the 101 answer (request id, traceresponse), by request. */
  private readonly handshakeHeaders = new WeakMap<IncomingMessage, string[]>();
  private server?: Server;
  private readonly sockets: SocketsPerCaller;

  constructor(
    @Inject(AGENTS) agents: AgentDefinition[],
    @Inject(ENV_CONFIG) private readonly env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    private readonly adapterHost: HttpAdapterHost,
    private readonly authenticator: Authenticator,
    private readonly invoker: StatelessInvokerService,
    private readonly audit: AuditLog,
    private readonly limiter: RateLimiter,
  ) {
    for (const agent of agents) if (agent.module !== 'v3') this.routes.set(`${agent.prefix}/stream`, agent);
    this.sockets = new SocketsPerCaller(env.http.streamSocket.maxPerCaller);
  }

  private socketServer(): WebSocketServer {
    if (this.wss) return this.wss;
    const { WebSocketServer } = require('ws') as typeof import('ws');
    // No per-message compression: a small compressed message must not inflate past the limit's intent.
    const wss = new WebSocketServer({ noServer: true, maxPayload: this.env.http.maxBodyBytes, perMessageDeflate: false });
    wss.on('headers', (headers, req) => headers.push(...(this.handshakeHeaders.get(req) ?? [])));
    return (this.wss = wss);
  }

  onApplicationBootstrap(): void {
    this.server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    this.server.on('upgrade', this.onUpgrade);
  }

  /** Open sockets would keep the HTTP server from closing: ask them to go (1001), then cut the rest. */
  async beforeApplicationShutdown(): Promise<void> {
    this.server?.off('upgrade', this.onUpgrade);
    const wss = this.wss;
    if (!wss) return;
    const open = [...wss.clients];
    for (const ws of open) ws.close(CloseCode.GOING_AWAY, 'server shutting down');
    const closed = open.filter((ws) => ws.readyState !== ws.CLOSED).map((ws) => once(ws, 'close'));
    await Promise.race([Promise.all(closed), delay(SHUTDOWN_GRACE_MS)]);
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  }

  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // A connection reset mid-handshake must not be an unhandled 'error' event.
    socket.on('error', () => socket.destroy());
    this.upgrade(req, socket, head).catch((err: unknown) => {
      this.logger.error({ err }, 'websocket upgrade failed');
      socket.destroy();
    });
  };

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const given = req.headers['x-request-id'];
    const requestId = requestIdFor(typeof given === 'string' ? given : undefined);
    const agent = this.routes.get(decodedPath(req.url) ?? '');
    const t = new UpgradeRequestTelemetry(this.telemetry, this.logger, req, requestId, agent && `${agent.prefix}/stream`, agent);
    const headers = { 'X-Request-Id': requestId, traceresponse: t.traceresponse() };
    if (!agent) return this.refuse(t, socket, req, new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'No such route'), headers);

    let caller: ToolCaller;
    let acceptedUntilMs: number | undefined;
    try {
      ({ caller, acceptedUntilMs } = await context.with(t.context, () => this.authenticate(req, requestId, agent, t)));
    } catch (err) {
      auditRefusal(this.audit, t.log.fields, err);
      return this.refuse(t, socket, req, err, headers);
    }

    // One socket is one invocation: it counts against the agent's rate limits (429 before the upgrade).
    let admission: Awaited<ReturnType<RateLimiter['admit']>>;
    try {
      admission = await this.limiter.admit(agent, caller.principal);
    } catch (err) {
      return this.refuse(t, socket, req, err, headers);
    }
    if (admission) {
      Object.assign(headers, admission.headers);
      socket.once('close', admission.release);
    }

    let accepted = false;
    // `ws` refused the handshake itself (400/405: not a valid WebSocket upgrade), or the client left.
    socket.once('close', () => accepted || t.finish(400));
    this.handshakeHeaders.set(
      req,
      Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    );
    this.socketServer().handleUpgrade(req, socket, head, (ws) => {
      accepted = true;
      // Counted from here to the socket's 'close', which `ws` emits once however it ends.
      const release = this.sockets.admit(caller.principal);
      if (release) ws.once('close', release);
      const deps = {
        invoker: this.invoker,
        logger: this.logger,
        keepaliveMs: this.env.http.sseKeepaliveMs,
        firstMessageTimeoutMs: this.env.http.streamSocket.firstMessageTimeoutMs,
      };
      const session = new StreamSocketSession(ws, agent, caller, deps, () => this.checkCredential(acceptedUntilMs, t));
      ws.once('close', (code: number) => t.finish(101, session.closeCode ?? code));
      if (!release) {
        const max = this.sockets.max;
        return session.refuse(new DomainError(ErrorCode.TOO_MANY_STREAMS, `at most ${max} open /stream sockets per caller; retry later`));
      }
      context.with(t.context, () =>
        session.run().catch((err: unknown) => {
          this.logger.error({ err, agent: agent.source }, 'stream socket failed');
          ws.terminate();
        }),
      );
    });
  }

  /**
   * The Authenticator reads an Express request, and an upgrade never went through Express: give it
   * Express's request prototype (what Express's own `init` does to every request) and the request id.
   */
  private async authenticate(
    req: IncomingMessage,
    requestId: string,
    agent: AgentDefinition,
    t: UpgradeRequestTelemetry,
  ): Promise<{ caller: ToolCaller; acceptedUntilMs?: number }> {
    Object.setPrototypeOf(req, this.adapterHost.httpAdapter.getInstance<Express>().request);
    const expressReq = req as Request;
    expressReq.requestId = requestId;
    expressReq.logContext = t.log;
    const principal = await this.authenticator.authenticate(expressReq, agentAccessOverride(agent));
    // The socket's lines name its caller, as every HTTP request's do (src/auth/auth.guard.ts).
    if (!t.log.fields.oid_hash) t.log.set(callerFields(principal));
    return { caller: { principal, bearerToken: expressReq[BEARER_TOKEN] }, acceptedUntilMs: expressReq.credentialAcceptedUntilMs };
  }

  /**
   * Input is served on the identity checked at the upgrade only while the token it was checked on
   * would still be accepted (its `exp` plus the clock skew; dev mode has none): later, the same
   * refusal and audit line as an HTTP request with that token.
   */
  private checkCredential(acceptedUntilMs: number | undefined, t: UpgradeRequestTelemetry): void {
    if (acceptedUntilMs === undefined || Date.now() < acceptedUntilMs) return;
    const err = new DomainError(ErrorCode.UNAUTHENTICATED, 'the bearer token expired before the input message came');
    auditRefusal(this.audit, t.log.fields, err);
    throw err;
  }

  private refuse(t: UpgradeRequestTelemetry, socket: Duplex, req: IncomingMessage, err: unknown, headers: Record<string, string>): void {
    const problem = context.with(t.context, () => problemOf(err, pathOf(req.url ?? '/'), this.logger, { http_request_id: headers['X-Request-Id'] }));
    const domain = toDomainError(err);
    const all: Record<string, string> = { ...headers, ...domain?.headers };
    if (domain?.retryAfter !== undefined) all['Retry-After'] = String(Math.max(0, Math.ceil(domain.retryAfter)));
    refuseUpgrade(socket, problem, all);
    t.finish(problem.status);
  }
}

/** The path of a request URL, percent-decoded (agent names are matched as written in the YAML). */
function decodedPath(url: string | undefined): string | undefined {
  try {
    return decodeURIComponent(pathOf(url ?? '/'));
  } catch {
    return undefined;
  }
}
