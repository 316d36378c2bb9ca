import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The installed command over the compiled dist/, as a user runs it (`bin/teal-agent-server.js`). */
const ROOT = resolve(__dirname, '../..');
const BIN = join(ROOT, 'bin', 'teal-agent-server.js');

/** dist/ is what the bin runs: rebuild it when any source is newer (scripts/test.sh builds first anyway). */
export function ensureBuilt(): void {
  const newest = (dir: string): number =>
    Math.max(
      0,
      ...readdirSync(dir, { withFileTypes: true }).map((e) =>
        e.isDirectory() ? newest(join(dir, e.name)) : e.name.endsWith('.spec.ts') ? 0 : statSync(join(dir, e.name)).mtimeMs,
      ),
    );
  const built = statSync(join(ROOT, 'dist', 'cli.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (built >= newest(join(ROOT, 'src'))) return;
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'pipe',
      timeout: 120_000,
    });
  } catch {
    // tsc still emits when another file has a type error; the tests judge the result.
  }
}

export interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** The JSON log lines written so far. */
  logs: () => Record<string, unknown>[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first log line `match` accepts (now or later) from the `from`-th on; rejects after `timeoutMs`. */
  waitForLog: (match: (line: Record<string, unknown>) => boolean, options?: { timeoutMs?: number; from?: number }) => Promise<Record<string, unknown>>;
  /** The port of the "listening" line. */
  listening: () => Promise<number>;
  stop: () => Promise<void>;
}

/**
 * Starts the CLI with only the given environment (never the test runner's TA_* variables): the
 * installed command by default, or `dist/cli.js` run directly (`entry: 'dist'`, as the benchmark does).
 */
export function runCli(args: string[], env: Record<string, string> = {}, { entry = 'bin' }: { entry?: 'bin' | 'dist' } = {}): CliRun {
  const child = spawn(process.execPath, [entry === 'bin' ? BIN : join(ROOT, 'dist', 'cli.js'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TA_HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const changed = new Set<() => void>();
  child.stdout!.on('data', (c) => ((out += String(c)), changed.forEach((f) => f())));
  child.stderr!.on('data', (c) => (err += String(c)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  const logs = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const waitForLog = (match: (line: Record<string, unknown>) => boolean, { timeoutMs = 10_000, from = 0 } = {}) =>
    new Promise<Record<string, unknown>>((ok, fail) => {
      const check = () => {
        const line = logs().slice(from).find(match);
        if (line) {
          changed.delete(check);
          clearTimeout(timer);
          ok(line);
        }
      };
      const timer = setTimeout(() => (changed.delete(check), fail(new Error(`no such log line after ${timeoutMs} ms:\n${out}\n${err}`))), timeoutMs);
      changed.add(check);
      check();
      // A process that ended writes nothing more.
      void exited.then(
        () => changed.has(check) && (changed.delete(check), clearTimeout(timer), fail(new Error(`exited before that log line:\n${out}\n${err}`))),
      );
    });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    logs,
    exited,
    waitForLog,
    listening: async () => (await waitForLog((l) => l.msg === 'teal-agent-server listening', { timeoutMs: 20_000 })).port as number,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
