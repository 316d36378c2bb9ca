import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { LeaseSweeperService } from '../tasks/run/lease-sweeper.service';
import { RunningRequestsService } from '../tasks/run/running-requests.service';
import { ToolRegistry } from '../tools/tool-registry';

/** How long a replaced config may keep running requests (SSE streams, v3 requests) before its app is closed anyway. */
export const DRAIN_LIMIT_MS = 10 * 60_000;
const DRAIN_POLL_MS = 500;

type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** One config's complete app. The first (booted) one owns the listening server; later ones are only init()ed. */
interface Generation {
  app: INestApplication;
  /** Express app of a reloaded generation; undefined for the first, which the request is already in. */
  handle?: (req: IncomingMessage, res: unknown) => void;
  /** Requests and sockets this generation still answers. */
  open: number;
}

/**
 * The apps built from successive configs, and which one new requests go to. Nest binds routes at
 * boot, so a reload builds a whole new app from the new config (through createApp, exactly as at
 * boot: same routes, OpenAPI documents, 404s and auth) and this switches new requests over to it
 * atomically; a request already running stays in the app it started in and finishes on the old
 * config. A replaced app is closed (its MCP connections with it) once its requests have ended, or
 * after DRAIN_LIMIT_MS. The old and new apps share the state store, like two replicas do.
 */
export class AgentGenerations {
  private current: Generation;
  private readonly draining = new Set<Promise<void>>();
  private closing = false;
  private bootUpgrades: UpgradeListener[] = [];

  constructor(
    private readonly boot: INestApplication,
    private readonly logger: Logger,
  ) {
    this.current = { app: boot, open: 0 };
  }

  /** The first Express middleware of the booted app: counts the request, and hands it to the current app. */
  readonly dispatch = (req: Request, res: Response, next: NextFunction): void => {
    const gen = this.current;
    gen.open++;
    res.once('close', () => gen.open--);
    if (gen.handle) gen.handle(req, res);
    else next();
  };

  /** Once the server listens: WebSocket upgrades (src/api/stateless/stream-socket.gateway.ts) follow the current app too. */
  attach(server: Server): void {
    this.bootUpgrades = server.listeners('upgrade') as UpgradeListener[];
    server.removeAllListeners('upgrade');
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const gen = this.current;
      gen.open++;
      socket.once('close', () => gen.open--);
      if (gen.handle) gen.app.getHttpServer().emit('upgrade', req, socket, head);
      else for (const listener of this.bootUpgrades) listener.call(server, req, socket, head);
    });
  }

  /** Sends new requests to `app` (already init()ed) and closes the replaced one once it is idle. */
  swap(app: INestApplication): void {
    const old = this.current;
    const handle = app.getHttpAdapter().getInstance() as Generation['handle'];
    this.current = { app, handle, open: 0 };
    // Dead processes' requests are the new config's to take over (its app sweeps the leases now).
    stopSweeping(old.app);
    const done = this.retire(old).finally(() => this.draining.delete(done));
    this.draining.add(done);
  }

  /** When the booted app closes: the current and replaced apps close with it. */
  async closeAll(): Promise<void> {
    // The process is stopping: replaced apps stop waiting for their requests.
    this.closing = true;
    await Promise.allSettled([...this.draining]);
    if (this.current.app !== this.boot) await this.current.app.close();
  }

  private async retire(gen: Generation): Promise<void> {
    const started = Date.now();
    const deadline = started + DRAIN_LIMIT_MS;
    while (!this.closing && !this.idle(gen) && Date.now() < deadline) await new Promise((r) => setTimeout(r, DRAIN_POLL_MS).unref());
    // At shutdown the graceful drain (src/common/shutdown) has already dealt with what ran.
    if (!this.closing && !this.idle(gen)) this.logger.warn({ open: gen.open }, 'config reload: closing the replaced agents with requests still running');
    try {
      // The booted app owns the server and the shared parts; what was replaced in it is its agents' tools.
      if (gen.app === this.boot) {
        if (!this.closing) await this.boot.get(ToolRegistry, { strict: false }).close();
      } else await gen.app.close();
      this.logger.info({ drained_ms: Date.now() - started }, 'config reload: the replaced config is closed');
    } catch (err) {
      this.logger.error({ err }, 'config reload: closing the replaced agents failed');
    }
  }

  private idle(gen: Generation): boolean {
    let running = 0;
    try {
      running = gen.app.get(RunningRequestsService, { strict: false }).size;
    } catch {
      // An app without v3 agents has no RunningRequestsService.
    }
    return gen.open <= 0 && running === 0;
  }
}

function stopSweeping(app: INestApplication): void {
  try {
    app.get(LeaseSweeperService, { strict: false }).stop();
  } catch {
    // An app without the v3 module sweeps nothing.
  }
}
