import { ChildProcess, spawn } from 'node:child_process';
import { cpuMs, rssMiB } from './proc-stats';

export interface Proc {
  child: ChildProcess;
  /** Milliseconds from spawn() to the first 200 on the ready URL (spawnServer only). */
  spawnToReadyMs?: number;
  stop(): Promise<void>;
  /** Resident set size in MiB (from /proc). */
  rssMiB(): number;
  /** User + system CPU time used so far, in ms (from /proc). */
  cpuMs(): number;
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

/**
 * Spawns a process and waits until `url` answers 200, polling every 5 ms (as
 * scripts/measure-startup.sh does) so the spawn-to-ready time is precise to a few ms.
 */
export async function spawnServer(args: string[], env: NodeJS.ProcessEnv, readyUrl: string, nodeArgs: string[] = []): Promise<Proc> {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${args.join(' ')} exited during start-up`);
    try {
      const r = await fetch(readyUrl);
      if (r.ok) return { ...wrap(child), spawnToReadyMs: performance.now() - spawnedAt };
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 5));
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
    rssMiB: () => rssMiB(child.pid!),
    cpuMs: () => cpuMs(child.pid!),
  };
}
