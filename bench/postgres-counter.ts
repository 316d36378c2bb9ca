import { createConnection, createServer, Server, Socket } from 'node:net';
import { ROUND_TRIPS, StoreCounter } from './store-counters';

/**
 * PostgreSQL: a TCP proxy to `targetPort` that reads the wire protocol as it passes. A round trip
 * is one ReadyForQuery (`Z`) the server sends: it ends every statement's answer (a function call
 * and a read alike: the extended protocol's Parse/Bind/Execute/Sync go out in one write) and the
 * start-up of a new connection. Statements are also counted as each runs (its Bind, or a simple
 * query: a named prepared statement is parsed once per connection and bound each time) by what
 * they do: the store function they call (`commit_task`, `append_stream`, `delete_batch`,
 * `sweep_expired`), `stream read` (the stream log), the archive index's `markArchived` (clearing
 * entries) and `listUnarchived` (a catch-up's read), `insert` (an INSERT, as the bench's same-store
 * baseline sends) or `read`; Parse messages are counted as `parse`, connections made as
 * `connections`. Point the server's
 * TA_POSTGRES_URL at `127.0.0.1:{port}`. Plain connections only (no TLS to read through).
 */
export async function postgresCountingProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<StoreCounter & { port: number }> {
  const counts: Record<string, number> = { [ROUND_TRIPS]: 0 };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    counts[CONNECTIONS] = (counts[CONNECTIONS] ?? 0) + 1;
    const upstream = createConnection({ port: targetPort, host: targetHost });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // The client's first message (start-up) has no type byte; every later one, and every server message, has one.
    // What each statement of this connection does, by its name ('' the unnamed one), learned from its Parse.
    const statements = new Map<string, string>();
    const fromClient = messageReader(true, (type, body) => {
      if (type === 'P') {
        const nameEnd = body.indexOf(0);
        statements.set(body.toString('utf8', 0, nameEnd), statementOp(body.toString('utf8', nameEnd + 1)));
        counts[PARSES] = (counts[PARSES] ?? 0) + 1;
      } else if (type === 'B' || type === 'Q') {
        // A statement runs: a Bind of a parsed one (after its portal's name, the statement's), or a simple query.
        const portalEnd = body.indexOf(0);
        const op = type === 'Q' ? statementOp(body.toString('utf8')) : statements.get(body.toString('utf8', portalEnd + 1, body.indexOf(0, portalEnd + 1)));
        if (op !== undefined) counts[op] = (counts[op] ?? 0) + 1;
      }
    });
    const fromServer = messageReader(false, (type) => {
      if (type === 'Z') counts[ROUND_TRIPS]!++;
    });
    client.on('data', (chunk: Buffer) => {
      fromClient(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      fromServer(chunk);
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    snapshot: async () => ({ ...counts }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The counter's key for Parse messages: statements parsed (a named prepared statement is parsed once per connection). */
export const PARSES = 'parse';

/**
 * The counter's key for connections made through the proxy. Each costs round trips of its own, not
 * a turn's: its start-up (one ReadyForQuery) and the store's clock sample (one statement).
 */
export const CONNECTIONS = 'connections';
export const ROUND_TRIPS_PER_CONNECTION = 2;

/** What a statement does, by its text: the store function it calls, else what it reads or writes. */
function statementOp(text: string): string {
  return (
    /\.(commit_task|append_stream|delete_batch|sweep_expired)\(/.exec(text)?.[1] ??
    (/\.stream_events\b/.test(text)
      ? 'stream read'
      : /\bSET unarchived_at = NULL\b/.test(text)
        ? 'markArchived'
        : /\bunarchived_at IS NOT NULL\b/.test(text)
          ? 'listUnarchived'
          : /^\s*INSERT\b/i.test(text)
            ? 'insert'
            : 'read')
  );
}

/** Splits a stream of protocol messages (a type byte, then an int32 length that counts itself) and hands each to `onMessage`. */
function messageReader(untypedFirst: boolean, onMessage: (type: string, body: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let first = untypedFirst;
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    for (;;) {
      const head = first ? 0 : 1;
      if (pending.length < head + 4) return;
      const length = pending.readInt32BE(head);
      if (pending.length < head + length) return;
      if (!first) onMessage(String.fromCharCode(pending[0]), pending.subarray(5, 1 + length));
      first = false;
      pending = pending.subarray(head + length);
    }
  };
}
