import type { INestApplication } from '@nestjs/common';
import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { Logger } from 'pino';
import { ShutdownStateService } from './shutdown-state.service';

/**
 * After the grace, how long the failed requests get to store their outcome and end their streams
 * (one store write each, and an `error` frame) before the remaining connections are cut.
 */
const SETTLE_MS = 5000;

/**
 * Graceful shutdown (SIGTERM/SIGINT; docs/deploy.md "Shutdown"): readiness turns 503 and the listener
 * closes at once (kept-alive connections get 503 SHUTTING_DOWN with `Connection: close`), running work
 * gets `graceMs` to finish, then what still runs is aborted: v3 requests are stored Failed with
 * reason `shutdown` and their lease released (a queued follow-on stays in the store for the next
 * replica), v1/v2 calls and streams end with a SHUTTING_DOWN problem. Then the app closes (store,
 * telemetry flush). Resolves when it is closed: true when every v3 run ended with its outcome
 * stored, false when one had to be cut off; rejects when closing failed. (A stream still open is
 * cut without making the drain unclean: it only relays what another replica stores.)
 */
export async function drainAndClose(app: INestApplication, graceMs: number, logger: Logger): Promise<boolean> {
  const started = Date.now();
  const state = app.get(ShutdownStateService);
  const server = app.getHttpServer() as Server;
  state.startDraining();
  logger.info({ grace_ms: graceMs, in_flight: state.busy }, 'shutting down: draining');
  // No new connections. Not http's close(), which also drops idle kept-alive connections: a proxy
  // that sends on one at that moment sees a reset; here it gets 503 with `Connection: close`.
  NetServer.prototype.close.call(server);
  let clean = await settledWithin(state.idle(), graceMs);
  if (!clean) {
    logger.warn({ in_flight: state.busy }, 'shutdown grace over: failing what still runs (reason shutdown)');
    state.endGrace();
    await settledWithin(state.idle(), SETTLE_MS);
    clean = state.runs === 0;
    if (!clean) logger.error({ runs: state.runs }, 'shutdown: requests still running after the grace; their outcomes may not be stored');
  }
  // Idle kept-alive connections, and streams that follow another replica's request.
  server.closeAllConnections();
  logger.info({ duration_ms: Date.now() - started }, 'drained; closing');
  await app.close();
  return clean;
}

async function settledWithin(p: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}
