import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface Proc {
  child: ChildProcess;
  stop(): Promise<void>;
  /** Resident set size in MiB (from /proc). */
  rssMiB(): number;
}

/** Spawns a node script that prints its port as its first stdout line; resolves with that port. */
export async function spawnWithPort(script: string, env: NodeJS.ProcessEnv): Promise<Proc & { port: number }> {
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const line = buf.split('\n')[0];
      if (buf.includes('\n')) resolve(Number(line));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { ...wrap(child), port };
}

/** Spawns a process and waits until `url` answers. */
export async function spawnServer(args: string[], env: NodeJS.ProcessEnv, readyUrl: string): Promise<Proc> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${args.join(' ')} exited during start-up`);
    try {
      const r = await fetch(readyUrl);
      if (r.ok) return wrap(child);
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${readyUrl} did not answer in 30 s`);
}

function wrap(child: ChildProcess): Proc {
  return {
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        // A child killed by a signal has no exit code, only a signal code.
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
    rssMiB: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return kb / 1024;
    },
  };
}
