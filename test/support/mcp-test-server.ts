import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { text as readText } from 'node:stream/consumers';
import { z } from 'zod';

/** One `tools/call` the server received, with the identity headers it came with. */
export interface RecordedMcpCall {
  tool: string;
  args: Record<string, unknown>;
  userId?: string;
  tenantId?: string;
  authorization?: string;
}

export interface McpTestServer {
  /** `http://127.0.0.1:PORT/mcp` */
  url: string;
  calls: RecordedMcpCall[];
  /** Calls whose cancellation (notifications/cancelled) reached the server, by tool. */
  canceled: string[];
  /** The next `n` tools/call requests get their connection destroyed before any answer. */
  dropNextCalls: (n: number) => void;
  /** While hung, requests are accepted and never answered (a stuck server); unhanging drops them. */
  hang: (on: boolean) => void;
  /** JSON-RPC methods of the requests held while hung. */
  parkedMethods: () => string[];
  /** How many sessions were initialized (a reconnect makes a new one). */
  initializations: () => number;
  /** Stops (dropping every connection and session) and starts again on the same port. */
  restart: () => Promise<void>;
  stop: () => Promise<void>;
  /** Listens again on the same port after `stop` (a server that comes back). */
  start: () => Promise<void>;
}

/**
 * A real MCP server over streamable HTTP (the SDK's server transport, stateful sessions) with
 * tools for the tool-layer tests:
 * - `whoami` (read-only): the `x-user-id` (calls also record `x-tenant-id`) and whether an `authorization` header came with the call;
 * - `echo` (read-only): `{text}` back;
 * - `slow` (read-only): waits `ms`, or until canceled;
 * - `fail` (non-destructive write): answers an error result;
 * - `wipe` (destructive) and `plain` (no annotations): for the risk mapping.
 */
export async function startMcpTestServer(options: { userIdHeader?: string; tenantIdHeader?: string } = {}): Promise<McpTestServer> {
  const userHeader = (options.userIdHeader ?? 'x-user-id').toLowerCase();
  const tenantHeader = (options.tenantIdHeader ?? 'x-tenant-id').toLowerCase();
  const calls: RecordedMcpCall[] = [];
  const canceled: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let drop = 0;
  let hung = false;
  let initializations = 0;
  const parked: ServerResponse[] = [];
  const parkedMethods: string[] = [];

  function mcpServer(): McpServer {
    const server = new McpServer({ name: 'mcp-test-server', version: '1.0.0' });
    const record = (tool: string, args: Record<string, unknown>, headers: Record<string, unknown> | undefined) => {
      calls.push({
        tool,
        args,
        userId: headers?.[userHeader] as string | undefined,
        tenantId: headers?.[tenantHeader] as string | undefined,
        authorization: headers?.authorization as string | undefined,
      });
    };
    server.registerTool('whoami', { description: 'Who is calling', inputSchema: {}, annotations: { readOnlyHint: true } }, async (_args, extra) => {
      const h = extra.requestInfo?.headers;
      record('whoami', {}, h);
      return { content: [{ type: 'text', text: JSON.stringify({ user: h?.[userHeader] ?? null, token: Boolean(h?.authorization) }) }] };
    });
    server.registerTool(
      'echo',
      { description: 'Echo the text', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
      async ({ text }, extra) => {
        record('echo', { text }, extra.requestInfo?.headers);
        return { content: [{ type: 'text', text: `echo: ${text}` }] };
      },
    );
    server.registerTool('slow', { description: 'Wait', inputSchema: { ms: z.number() }, annotations: { readOnlyHint: true } }, async ({ ms }, extra) => {
      record('slow', { ms }, extra.requestInfo?.headers);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          canceled.push('slow');
          resolve();
        });
      });
      return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
    });
    server.registerTool(
      'fail',
      { description: 'Always fails', inputSchema: {}, annotations: { readOnlyHint: false, destructiveHint: false } },
      async (_args, extra) => {
        record('fail', {}, extra.requestInfo?.headers);
        return { content: [{ type: 'text', text: 'boom: the test tool failed' }], isError: true };
      },
    );
    server.registerTool('wipe', { description: 'Destructive', inputSchema: {}, annotations: { destructiveHint: true } }, async () => ({
      content: [{ type: 'text', text: 'wiped' }],
    }));
    server.registerTool('plain', { description: 'No annotations', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'plain' }] }));
    return server;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = req.method === 'POST' ? JSON.parse((await readText(req)) || 'null') : undefined;
    if (hung) {
      parked.push(res);
      parkedMethods.push(...(Array.isArray(body) ? body : [body]).map((m: { method?: string } | null) => m?.method ?? 'response'));
      return;
    }
    if (drop > 0 && isToolCall(body)) {
      drop--;
      res.socket?.destroy();
      return;
    }
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!transport) {
      if (typeof sid === 'string' || body?.method !== 'initialize') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      initializations++;
      await mcpServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  }

  let server: Server;
  let port = 0;
  const sockets = new Set<Socket>();
  async function listen(): Promise<void> {
    server = createServer((req, res) => {
      handle(req, res).catch((err: unknown) => {
        console.error('mcp-test-server failed', err);
        res.destroy();
      });
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  }
  async function close(): Promise<void> {
    for (const t of sessions.values()) await t.close().catch(() => undefined);
    sessions.clear();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  await listen();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    canceled,
    dropNextCalls: (n) => void (drop = n),
    hang: (on) => {
      hung = on;
      if (!on) for (const res of parked.splice(0)) res.socket?.destroy();
    },
    initializations: () => initializations,
    parkedMethods: () => [...parkedMethods],
    restart: async () => {
      await close();
      await listen();
    },
    stop: close,
    start: listen,
  };
}

function isToolCall(body: unknown): boolean {
  const msgs = Array.isArray(body) ? body : [body];
  return msgs.some((m) => (m as { method?: string } | null)?.method === 'tools/call');
}
