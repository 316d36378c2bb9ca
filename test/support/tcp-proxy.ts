import { createConnection, createServer, Server, Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a store (Redis, DynamoDB Local), so a test can fail the store
 * for one replica only, as a network would: `hold()` stops passing what the replica sends (its
 * writes hang, unanswered, as in a stall), `release()` passes it on; `down()` drops every
 * connection and refuses new ones (connection refused), `up()` listens again on the same port.
 * `close()` drops everything, held bytes included: they never reach the store. A `tap` (below) can
 * watch what clients send and swallow or cut what the server answers.
 */
export interface TcpProxy {
  port: number;
  hold(): void;
  release(): void;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/** One proxied connection, as a tap sees it: `upstreamPort` is its port as the server sees it; `tag`, the tap's own mark. */
export interface TappedConnection {
  upstreamPort: number | undefined;
  tag?: string;
}

/**
 * Hooks into what passes (both optional): `request` sees each chunk the client sends before it is
 * passed on; `answer` decides for each chunk the server sends: pass it, swallow it (the client
 * never hears it), or cut the connection instead.
 */
export interface TcpTap {
  request?(chunk: Buffer, connection: TappedConnection): void;
  answer?(chunk: Buffer, connection: TappedConnection): 'pass' | 'swallow' | 'cut';
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1', tap: TcpTap = {}): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket; waiting: Buffer[] }>();
  let held = false;
  let server: Server | undefined;
  let port = 0;

  const accept = (client: Socket) => {
    const upstream = createConnection({ port: targetPort, host: targetHost });
    const pair = { client, upstream, waiting: [] as Buffer[] };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    const tapped: TappedConnection = {
      get upstreamPort() {
        return upstream.localPort;
      },
    };
    // By hand rather than pipe(): a held connection's bytes wait here, and are dropped with it.
    client.on('data', (chunk: Buffer) => {
      tap.request?.(chunk, tapped);
      if (held) pair.waiting.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      const verdict = tap.answer?.(chunk, tapped) ?? 'pass';
      if (verdict === 'pass') client.write(chunk);
      else if (verdict === 'cut') drop();
    });
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer(accept);
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as { port: number }).port;
        resolve();
      });
    });

  const dropAll = async () => {
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
    const s = server;
    server = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  return {
    get port() {
      return port;
    },
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const pair of pairs) for (const chunk of pair.waiting.splice(0)) pair.upstream.write(chunk);
    },
    down: dropAll,
    up: listen,
    close: dropAll,
  };
}
