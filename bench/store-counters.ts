import { createServer, request, Agent, Server } from 'node:http';
import { connect, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';

/**
 * Counts what a server under test asks of its state store, from outside the server: Redis's own
 * INFO counters and MONITOR feed, and a counting HTTP proxy in front of DynamoDB Local.
 * `snapshot()` returns cumulative counts; the benchmark divides deltas over K turns by K.
 */
export interface StoreCounter {
  snapshot(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/** The key holding round trips in a snapshot; the others are per-command (or per-operation) counts. */
export const ROUND_TRIPS = 'round trips';

/**
 * Redis: round trips as INFO stats' total_reads_processed (with one turn at a time on one
 * connection, a pipeline or MULTI block arrives in one read, so reads ≈ round trips), and the
 * commands from MONITOR: those a client sent (`get`; a MULTI block's one by one beside `multi` and
 * `exec`) apart from those a script ran (`lua:get`). The counter's own INFO is left out.
 */
export function redisCounter(url: string, options: { commands?: boolean } = {}): StoreCounter {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const commands: Record<string, number> = {};
  // `commands: false`: round trips only (no MONITOR connection). MONITOR is read from a plain
  // socket: ioredis's own monitor() can crash its reader ("Command queue state error") when the
  // first lines of the feed arrive in the same packet as MONITOR's OK.
  // Both start once the counter's own connection is ready, so its handshake is counted in neither.
  const ready = redis.ping();
  const monitoring = options.commands === false ? ready.then(() => undefined) : ready.then(() => monitorFeed(url, commands));
  let snapshots = 0;
  return {
    async snapshot() {
      await monitoring;
      const info = await redis.info('stats');
      await sleep(50); // MONITOR's feed of what ran before this INFO is on its way on another socket
      // Each snapshot's INFO is one read on the server, counted by the time it answers: less them all.
      const reads = Number(/^total_reads_processed:(\d+)/m.exec(info)?.[1] ?? NaN) - ++snapshots;
      return { ...commands, [ROUND_TRIPS]: reads };
    },
    close: async () => {
      (await monitoring)?.destroy();
      await redis.quit();
    },
  };
}

/**
 * Counts the commands of Redis's MONITOR feed (`+<time> [<db> <source>] "<command>" …` a line) into
 * `commands`: `lua:<command>` for those a script ran; the counter's own INFO left out. Resolves once
 * MONITOR is on (its OK read).
 */
function monitorFeed(url: string, commands: Record<string, number>): Promise<Socket> {
  const { hostname, port, password, username } = new URL(url);
  return new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port || 6379) });
    let pending = '';
    // MONITOR's OK, after AUTH's when the URL has a password.
    let oks = password ? 2 : 1;
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.on('connect', () => socket.write(`${password ? `AUTH ${username || 'default'} ${decodeURIComponent(password)}\r\n` : ''}MONITOR\r\n`));
    socket.on('data', (chunk: string) => {
      pending += chunk;
      let end: number;
      while ((end = pending.indexOf('\r\n')) !== -1) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (line === '+OK' && oks > 0) {
          if (--oks === 0) resolve(socket);
          continue;
        }
        if (line.startsWith('-') && oks > 0) return reject(new Error(`Redis refused MONITOR: ${line}`));
        const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"/.exec(line);
        if (!m) continue;
        const name = `${m[1] === 'lua' ? 'lua:' : ''}${m[2]!.toLowerCase()}`;
        if (name !== 'info') commands[name] = (commands[name] ?? 0) + 1;
      }
    });
  });
}

/**
 * DynamoDB: an HTTP proxy to `target` (DynamoDB Local) counting requests by X-Amz-Target (one
 * request = one round trip; a retried call counts twice). Point the server's endpoint at `url`.
 */
export async function dynamoDbCountingProxy(target: string): Promise<StoreCounter & { url: string }> {
  const { hostname, port } = new URL(target);
  const agent = new Agent({ keepAlive: true });
  const counts: Record<string, number> = { [ROUND_TRIPS]: 0 };
  const server: Server = createServer((req, res) => {
    const op = String(req.headers['x-amz-target'] ?? 'other').replace(/^DynamoDB_\d+\./, '');
    counts[op] = (counts[op] ?? 0) + 1;
    counts[ROUND_TRIPS]!++;
    const upstream = request({ hostname, port, path: req.url, method: req.method, headers: req.headers, agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    snapshot: async () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
      }),
  };
}

/** Per-turn averages of the counts that changed between two snapshots. */
export function perTurn(before: Record<string, number>, after: Record<string, number>, turns: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const delta = value - (before[key] ?? 0);
    if (delta !== 0) out[key] = delta / turns;
  }
  return out;
}
