import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool as McpToolInfo } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { McpServerConfig } from '../../agents/config/mcp-server.schema';
import { errorMessage, ToolTimeoutError } from '../tool-error';
import { fetchWithCallHeaders, withCallHeaders, withoutCallHeaders } from './mcp-call-headers';

export type { McpToolInfo };

/** JSON-RPC errors that are the server's answer to one request: the connection itself is fine. */
const ANSWERS = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound, ErrorCode.InvalidRequest, ErrorCode.InternalError]);

/** How long a failed tool listing is remembered before the server is asked again. */
const LISTING_RETRY_MS = 5_000;

export interface McpCallOptions {
  signal: AbortSignal;
  headers: Record<string, string>;
  /** The request's `_meta` (the Python plugin host reads the caller's authorization and a log tag there). */
  meta?: Record<string, unknown>;
}

/** What an owner of a connection may hear about (the Python plugin host logs a stdio child's stderr with the calls' ids). */
export interface McpConnectionHooks {
  /** Each chunk a stdio child writes to stderr; without it, chunks are logged at debug. */
  stderr?: (chunk: string) => void;
  /** How long a ping may take (readiness, and after a timed-out call); default: the connect timeout, at most 5 s. */
  pingTimeoutMs?: number;
}

/** A restart after a failure waits RESTART_BASE_MS·2^(failures−1), at most RESTART_MAX_MS, from the failure. */
const RESTART_BASE_MS = 250;
const RESTART_MAX_MS = 30_000;

/**
 * One MCP server of one agent: connects on first use, lists the tools once and keeps the list,
 * and calls tools over a shared session. A failure of the connection (the process died, the HTTP
 * session is gone) drops the session: the failing call becomes an error result, and the next call
 * connects afresh (the tool list is kept). A call that times out is canceled on the server, which
 * is then pinged: a server that does not answer (hung) is dropped the same way, while one slow
 * tool does not cost the other calls their session. `close()` ends the session and stops a stdio
 * child.
 */
export class McpConnection {
  private client?: Client;
  private connecting?: Promise<Client>;
  private tools?: Promise<McpToolInfo[]>;
  private closed = false;
  private health?: Promise<void>;
  /** Failures (a connect that failed, a session that broke) since the server last answered a call. */
  private failures = 0;
  private lastFailureAt = 0;

  constructor(
    readonly config: McpServerConfig,
    /** Connect and list timeout, in ms. */
    private readonly connectTimeoutMs: number,
    private readonly logger?: Logger,
    private readonly hooks: McpConnectionHooks = {},
  ) {}

  get name(): string {
    return this.config.name;
  }

  /** The stdio child's pid while connected (for operators and tests). */
  get pid(): number | undefined {
    const t = this.client?.transport;
    return t instanceof StdioClientTransport ? (t.pid ?? undefined) : undefined;
  }

  /**
   * The server's tools, listed once. A failed listing is kept for LISTING_RETRY_MS, so requests
   * meanwhile go ahead (without these tools) instead of each waiting for the connect timeout.
   */
  listTools(): Promise<McpToolInfo[]> {
    this.tools ??= withoutCallHeaders(async () => {
      const client = await this.connected();
      const all: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: this.connectTimeoutMs });
        all.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return all;
    });
    this.tools.catch(() => setTimeout(() => (this.tools = undefined), LISTING_RETRY_MS).unref());
    return this.tools;
  }

  async callTool(name: string, args: Record<string, unknown>, options: McpCallOptions): Promise<CallToolResult> {
    const client = await withoutCallHeaders(() => this.connected());
    try {
      // Our executor owns the timeout (through the signal); the SDK's own stays out of its way.
      const result = (await withCallHeaders(options.headers, () =>
        client.callTool({ name, arguments: args, ...(options.meta ? { _meta: options.meta } : {}) }, undefined, {
          signal: options.signal,
          timeout: 2 ** 31 - 1,
        }),
      )) as CallToolResult;
      this.failures = 0;
      return result;
    } catch (err) {
      if (options.signal.reason instanceof ToolTimeoutError) {
        // One slow tool, or a hung server? Ask the server: only a server that no longer answers is dropped.
        this.checkHealth(client);
      } else if (!options.signal.aborted && !(err instanceof McpError && ANSWERS.has(err.code))) {
        // The process died, the session is gone, the connection broke: start afresh next time.
        await this.drop(client, errorMessage(err));
      }
      throw classify(err);
    }
  }

  /**
   * Readiness (`required: true`): connects if need be, then pings. A server that does not answer is
   * dropped, so the next use connects afresh; the error names the server.
   */
  async ping(): Promise<void> {
    let client: Client;
    try {
      client = await withoutCallHeaders(() => this.connected());
    } catch (err) {
      throw new Error(`MCP server ${this.name} unreachable: ${errorMessage(err)}`, { cause: err });
    }
    try {
      await withoutCallHeaders(() => client.ping({ timeout: this.pingTimeoutMs }));
    } catch (err) {
      await this.drop(client, `no answer to a readiness ping (${errorMessage(err)})`);
      throw new Error(`MCP server ${this.name} unreachable: ${errorMessage(err)}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  private async connected(): Promise<Client> {
    if (this.health) await this.health;
    if (this.closed) throw new Error(`MCP server ${this.name}: the server is shutting down`);
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    await this.restartDelay();
    const client = new Client({ name: 'teal-agent-server', version: '0.1.0' }, { capabilities: {} });
    client.onclose = () => {
      // Closed under us (the child exited, the stream ended): a failure, unlike our own close.
      if (this.client !== client) return;
      this.client = undefined;
      this.failed();
    };
    try {
      await client.connect(this.transport(), { timeout: this.connectTimeoutMs });
    } catch (err) {
      await client.close().catch(() => undefined);
      this.failed();
      // Nothing was asked of the server yet: trying again cannot repeat any effect.
      throw Object.assign(new Error(`cannot connect to MCP server ${this.name}: ${errorMessage(err)}`, { cause: err }), {
        retryClass: 'always',
      });
    }
    if (this.closed) {
      await client.close().catch(() => undefined);
      throw new Error(`MCP server ${this.name}: the server is shutting down`);
    }
    this.client = client;
    this.logger?.info({ mcp_server: this.name, transport: this.config.transport, pid: this.pid }, 'MCP server connected');
    return client;
  }

  private transport(): Transport {
    const c = this.config;
    if (c.transport === 'http') {
      return new StreamableHTTPClientTransport(new URL(c.url!), {
        requestInit: c.headers ? { headers: c.headers } : undefined,
        fetch: fetchWithCallHeaders(),
        // A lost stream fails its calls; we reconnect on the next call instead of in the background.
        reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
      });
    }
    const [command, ...split] = c.args ? [c.command!] : c.command!.trim().split(/\s+/);
    const transport = new StdioClientTransport({ command: command!, args: c.args ?? split, env: c.env, stderr: 'pipe' });
    const stderr = this.hooks.stderr;
    transport.stderr?.on('data', (chunk: Buffer) => {
      if (stderr) stderr(chunk.toString('utf8'));
      else this.logger?.debug({ mcp_server: this.name, stderr: chunk.toString('utf8').trimEnd() }, 'MCP server stderr');
    });
    return transport;
  }

  /** Pings the server after a timed-out call; calls wait for the answer, and a silent server is dropped. */
  private checkHealth(client: Client): void {
    this.health ??= withoutCallHeaders(() => client.ping({ timeout: this.pingTimeoutMs }))
      .then(
        () => undefined,
        (err: unknown) => this.drop(client, `no answer to a ping after a timed-out call (${errorMessage(err)})`),
      )
      .finally(() => (this.health = undefined));
  }

  private get pingTimeoutMs(): number {
    return this.hooks.pingTimeoutMs ?? Math.min(this.connectTimeoutMs, 5_000);
  }

  /**
   * A server that keeps failing (a stdio child that crashes at every start or every call) is not
   * restarted in a tight loop: after the first failure the next connect waits, doubling per failure.
   */
  private async restartDelay(): Promise<void> {
    if (!this.failures) return;
    const wait = this.lastFailureAt + Math.min(RESTART_BASE_MS * 2 ** (this.failures - 1), RESTART_MAX_MS) - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait).unref());
  }

  private failed(): void {
    this.failures++;
    this.lastFailureAt = Date.now();
  }

  private async drop(client: Client, reason: string): Promise<void> {
    if (this.client !== client) return;
    this.client = undefined;
    this.failed();
    this.logger?.warn({ mcp_server: this.name, reason }, 'MCP server connection dropped; the next call reconnects');
    await client.close().catch(() => undefined);
  }
}

/** Marks how a failed call may be retried (see retryClassOf). */
function classify(err: unknown): unknown {
  if (err instanceof ToolTimeoutError || (err as { retryClass?: unknown })?.retryClass) return err;
  const e = err as Error & { retryClass?: string };
  if (err instanceof McpError && ANSWERS.has(err.code)) e.retryClass = 'never';
  // A session the server no longer knows was not used for this call.
  else if (err instanceof StreamableHTTPError && err.code === 404) e.retryClass = 'always';
  else if (err instanceof Error) e.retryClass = 'if-idempotent';
  return err;
}
