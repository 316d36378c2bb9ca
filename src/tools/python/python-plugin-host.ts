import { spawnSync } from 'node:child_process';
import { newUuid } from '../../common/ids/uuid.util';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { McpServerConfig } from '../../agents/config/mcp-server.schema';
import { LogContext, LogFields } from '../../common/logging/log-context';
import type { PythonPluginsConfig } from '../../config/env.config';
import { KeyedSemaphore } from '../../common/concurrency/keyed-semaphore.util';
import type { McpConnection, McpToolInfo } from '../mcp/mcp-connection';
import type { Tool } from '../tool.port';
import type { ToolSource } from '../toolset';
import { PythonPluginTool, PythonToolCaller } from './python-plugin-tool';
import { PACKAGE_ROOT } from '../../package-root';

/** The host program, shipped beside dist/ and src/. */
export const PLUGIN_HOST_SCRIPT = join(PACKAGE_ROOT, 'plugin-host', 'teal_plugin_host.py');

export const DEFAULT_PYTHON_PLUGINS: PythonPluginsConfig = { interpreter: 'python3', enabled: true, concurrency: 8 };

/** The boot check imports the module once: a module that takes longer than this to import is refused. */
const CHECK_TIMEOUT_MS = 60_000;
/** Connecting (start, import, `initialize`) and listing. */
const CONNECT_TIMEOUT_MS = 60_000;
/** A host on this machine answers a ping in milliseconds, even while its plugins' threads run; one that takes a second is stuck. */
const PING_TIMEOUT_MS = 1_000;
/** A stderr line longer than this is cut; an unfinished line is written out once it reaches it. */
const MAX_STDERR_LINE = 8_192;
const TAGGED = /^\[call:([A-Za-z0-9_-]{1,64})\] (.*)$/s;

/**
 * The Python plugin host of one plugin module (upstream's `custom_plugins.py`): a child process
 * (plugin-host/teal_plugin_host.py) serving the module's classes that agents name as MCP tools over
 * stdio, through the same connection as any stdio MCP server (restarted with backoff when it dies;
 * a hung host dropped after a timed-out call). Started on first use; checked at boot by a one-off
 * `--check` run, so a module that does not import stops the boot instead of the first request.
 * Calls in flight are bounded per host; what the plugins print (stderr; stdout is the protocol's)
 * is logged with the ids of the request whose call printed it.
 */
export class PythonPluginHost {
  private readonly classes = new Set<string>();
  private connection?: McpConnection;
  private readonly slots: KeyedSemaphore;
  /** The log fields of each call in flight, by the tag its `_meta` carries to the host. */
  private readonly inFlight = new Map<string, LogFields>();
  private partial = '';

  constructor(
    /** The module's absolute path. */
    readonly module: string,
    private readonly config: PythonPluginsConfig,
    private readonly logger?: Logger,
  ) {
    this.slots = new KeyedSemaphore(config.concurrency);
  }

  /** The classes it serves, in the order agents named them. */
  get classNames(): string[] {
    return [...this.classes];
  }

  /** Serve this class too (before the first use: the host is started with the classes named so far). */
  add(className: string): void {
    this.classes.add(className);
  }

  /** The tools of one class (`{Class}-{function}`), as a source for an agent's toolset. */
  source(className: string): ToolSource {
    let mapped: { from: McpToolInfo[]; tools: Tool[] } | undefined;
    return {
      name: `python:${className}`,
      unreachable: `Python plugin ${className} unavailable`,
      list: async (): Promise<Tool[]> => {
        const infos = await this.connect().listTools();
        if (mapped?.from !== infos) {
          mapped = {
            from: infos,
            tools: infos.filter((i) => i.name.startsWith(`${className}-`)).map((info) => new PythonPluginTool(this.caller, className, info)),
          };
        }
        return mapped.tools;
      },
    };
  }

  /**
   * Imports the module in a one-off run of the host (`--check`): undefined when it serves every
   * class, else the reason in one line (the interpreter missing; the host's own line naming the file,
   * the class or the Python error).
   */
  check(): string | undefined {
    const run = spawnSync(this.config.interpreter, this.args(true), { encoding: 'utf8', timeout: CHECK_TIMEOUT_MS, env: this.env() });
    if (run.error) {
      const missing = (run.error as NodeJS.ErrnoException).code === 'ENOENT';
      return missing
        ? `the Python interpreter "${this.config.interpreter}" (TA_PYTHON) was not found; install Python 3.10 or newer, point TA_PYTHON at one, or set TA_PYTHON_PLUGINS=off`
        : `the Python plugin host did not finish its import check: ${run.error.message}`;
    }
    if (run.status === 0) return undefined;
    const lines = run.stderr.trim().split('\n');
    return lines[lines.length - 1]?.replace(/^teal-plugin-host: /, '') || `the Python plugin host exited with status ${run.status}`;
  }

  /**
   * Runs one call within the host's bound on calls in flight; the call's `_meta.log_tag` ties what
   * the plugin prints meanwhile to the caller's log context.
   */
  private readonly caller: PythonToolCaller = (tool, args, meta, signal) =>
    this.slots.run(this.module, async () => {
      signal.throwIfAborted();
      const tag = newUuid();
      this.inFlight.set(tag, { ...LogContext.active()?.fields });
      try {
        return await this.connect().callTool(tool, args, { signal, headers: {}, meta: { ...meta, log_tag: tag } });
      } finally {
        this.inFlight.delete(tag);
      }
    });

  /** The connection (started on first use). */
  private connect(): McpConnection {
    if (!this.connection) {
      // Loaded here, not at the top: the MCP SDK is for agents that have such tools.
      const { McpConnection } = require('../mcp/mcp-connection') as typeof import('../mcp/mcp-connection');
      const config = { name: `python:${this.module}`, transport: 'stdio', command: this.config.interpreter, args: this.args(false), env: this.env() };
      this.connection = new McpConnection(config as McpServerConfig, CONNECT_TIMEOUT_MS, this.logger, {
        stderr: (chunk) => this.stderr(chunk),
        pingTimeoutMs: PING_TIMEOUT_MS,
      });
    }
    return this.connection;
  }

  async close(): Promise<void> {
    await this.connection?.close();
  }

  private args(check: boolean): string[] {
    return [PLUGIN_HOST_SCRIPT, '--module', this.module, '--plugins', [...this.classes].join(','), ...(check ? ['--check'] : [])];
  }

  /** The plugins see the server's environment, as upstream's plugins see their process's; output is not buffered. */
  private env(): Record<string, string> {
    const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
    return { ...env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' };
  }

  private stderr(chunk: string): void {
    const text = this.partial + chunk;
    const lines = text.split('\n');
    this.partial = lines.pop()!;
    if (this.partial.length >= MAX_STDERR_LINE) {
      lines.push(this.partial);
      this.partial = '';
    }
    for (const line of lines) {
      if (!line.trim()) continue;
      const tagged = TAGGED.exec(line);
      const fields = tagged ? this.inFlight.get(tagged[1]!) : undefined;
      const text = (tagged ? tagged[2]! : line).slice(0, MAX_STDERR_LINE);
      this.logger?.info({ ...fields, python_module: this.module, stderr: text }, 'Python plugin stderr');
    }
  }
}
