/**
 * The to-do MCP server of the demos: streamable HTTP, in memory, one list per user.
 *
 * The user is whoever the agent server says is calling: it sends the authenticated caller's id in
 * a header on every MCP request (the agent's `mcp_servers[].user_id_header`, `X-User-Id` here).
 * No tool takes a user argument, so the model cannot choose whose list it reads or writes; a call
 * without the header is refused.
 *
 * Run it:   npm run demo:todo-mcp   (node demos/mcp/todo-mcp.js: checks the Node version first;
 *           PORT=3001, HOST=127.0.0.1 by default), or node demos/mcp/todo-mcp.server.ts on Node 24
 * Then serve demos/agents/todo-assistant.yaml (docs/tools.md has the walkthrough).
 *
 * Erasable TypeScript only, so Node runs it as is; tests import `startTodoMcpServer`.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

interface Task {
  id: string;
  title: string;
  done: boolean;
}

interface UserList {
  next: number;
  tasks: Map<string, Task>;
}

export interface TodoMcpServer {
  /** `http://host:port/mcp` */
  url: string;
  stop: () => Promise<void>;
}

type Text = { content: { type: 'text'; text: string }[]; isError?: boolean };
const text = (t: string): Text => ({ content: [{ type: 'text', text: t }] });
const refuse = (t: string): Text => ({ content: [{ type: 'text', text: t }], isError: true });

export async function startTodoMcpServer(options: { port?: number; host?: string; userIdHeader?: string } = {}): Promise<TodoMcpServer> {
  const header = (options.userIdHeader ?? 'x-user-id').toLowerCase();
  const lists = new Map<string, UserList>();

  /** The caller's list, from the injected header only; undefined when the header is missing. */
  const listOf = (headers: Record<string, string | string[] | undefined> | undefined): UserList | undefined => {
    const raw = headers?.[header];
    const user = Array.isArray(raw) ? raw[0] : raw;
    if (!user) return undefined;
    let list = lists.get(user);
    if (!list) lists.set(user, (list = { next: 1, tasks: new Map() }));
    return list;
  };
  const noUser = () => refuse(`no user identity: this server needs the ${header} header (set user_id_header on the agent's MCP server)`);
  const notFound = (id: string) => refuse(`no task ${id} in your list`);
  const line = (t: Task) => `${t.id}. [${t.done ? 'x' : ' '}] ${t.title}`;

  function mcpServer(): McpServer {
    const server = new McpServer({ name: 'todo', version: '1.0.0' });
    server.registerTool(
      'add_task',
      {
        description: "Adds a task to the caller's to-do list",
        inputSchema: { title: z.string().min(1).max(200).describe('What to do') },
        annotations: { readOnlyHint: false, destructiveHint: false },
      },
      async ({ title }, extra) => {
        const list = listOf(extra.requestInfo?.headers);
        if (!list) return noUser();
        const task = { id: String(list.next++), title, done: false };
        list.tasks.set(task.id, task);
        return text(`Added task ${task.id}: ${title}`);
      },
    );
    server.registerTool(
      'list_tasks',
      {
        description: "Lists the caller's tasks",
        inputSchema: { status: z.enum(['open', 'done', 'all']).default('all').describe('Which tasks') },
        annotations: { readOnlyHint: true },
      },
      async ({ status }, extra) => {
        const list = listOf(extra.requestInfo?.headers);
        if (!list) return noUser();
        const shown = [...list.tasks.values()].filter((t) => status === 'all' || (status === 'done') === t.done);
        return text(shown.length ? shown.map(line).join('\n') : 'No tasks.');
      },
    );
    server.registerTool(
      'complete_task',
      {
        description: 'Marks a task done',
        inputSchema: { id: z.string().describe('The task id') },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
      },
      async ({ id }, extra) => {
        const list = listOf(extra.requestInfo?.headers);
        if (!list) return noUser();
        const task = list.tasks.get(id);
        if (!task) return notFound(id);
        task.done = true;
        return text(`Completed ${line(task)}`);
      },
    );
    server.registerTool(
      'update_task',
      {
        description: 'Renames a task',
        inputSchema: { id: z.string().describe('The task id'), title: z.string().min(1).max(200).describe('The new title') },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
      },
      async ({ id, title }, extra) => {
        const list = listOf(extra.requestInfo?.headers);
        if (!list) return noUser();
        const task = list.tasks.get(id);
        if (!task) return notFound(id);
        task.title = title;
        return text(`Updated ${line(task)}`);
      },
    );
    server.registerTool(
      'delete_task',
      {
        description: 'Deletes a task',
        inputSchema: { id: z.string().describe('The task id') },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
      },
      async ({ id }, extra) => {
        const list = listOf(extra.requestInfo?.headers);
        if (!list) return noUser();
        if (!list.tasks.delete(id)) return notFound(id);
        return text(`Deleted task ${id}`);
      },
    );
    return server;
  }

  // Stateless streamable HTTP: every POST gets a fresh server and transport (the lists are shared),
  // so a restart of either side never strands a session.
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (new URL(req.url ?? '/', 'http://todo').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}/mcp`,
    stop: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** The server as a program: PORT and HOST from the environment, one line when it listens. */
export function runTodoMcpServer(): void {
  startTodoMcpServer({ port: Number(process.env.PORT ?? 3001), host: process.env.HOST ?? '127.0.0.1' }).then(
    (s) => process.stdout.write(`todo MCP server listening on ${s.url} (user id header: X-User-Id)\n`),
    (err: unknown) => {
      process.stderr.write(`todo MCP server failed to start: ${String(err)}\n`);
      process.exit(1);
    },
  );
}

if (process.argv[1] && /todo-mcp\.server\.[jt]s$/.test(process.argv[1])) runTodoMcpServer();
