/**
 * The in-memory store gives back the memory of expired tasks. A real server process (the bin over
 * dist/, on the demo agents) runs with a short TA_TASK_TTL_SECONDS under `node --expose-gc` with
 * test/support/heap-probe.cjs preloaded, which answers an IPC 'heap' message with the live heap after
 * a full GC. ~50 MiB of task history is written; once every task has expired and the sweep has
 * passed, the heap must be back within a small slack of what it was before. The TTL is long enough
 * for the whole load to be written (and measured) before the first of it expires.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from '../support/http';
import { freePort } from '../support/services';
import { v3Client } from '../support/v3-client';

const ROOT = join(__dirname, '..', '..');
const MiB = 1024 * 1024;
const TASKS = 250;
/** Echoed back by the offline model, so each task holds it twice (the message and the answer). */
const MESSAGE = 'x'.repeat(200 * 1024);
/** Long enough for the whole load to be written before its first task expires, on a busy machine. */
const TTL_SECONDS = 30;
/** What may stay behind after the sweep: caches, JIT code and allocator slack, not task data. */
const SLACK = 8 * MiB;

jest.setTimeout(240_000);

describe('memory store: expired tasks are freed', () => {
  let child: ChildProcess;
  let base: string;

  const heapUsed = () =>
    new Promise<number>((ok) => {
      child.once('message', (m: { heapUsed: number }) => ok(m.heapUsed));
      child.send('heap');
    });

  /** Creates `n` tasks, 10 at a time, each with one message (by default a big one). */
  async function createTasks(n: number, message = MESSAGE): Promise<void> {
    for (let i = 0; i < n; i += 10) {
      const batch = Array.from({ length: Math.min(10, n - i) }, () => v3Client(base).say(message));
      for (const res of await Promise.all(batch)) expect(res.status).toBe(200);
    }
  }

  /** Polls the heap after GC until it is at most `limit` bytes, or `ms` pass; returns the last figure. */
  async function heapSettlesBelow(limit: number, ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    let heap = await heapUsed();
    while (heap > limit && Date.now() < deadline) {
      await sleep(500);
      heap = await heapUsed();
    }
    return heap;
  }

  beforeAll(async () => {
    const bin = join(ROOT, 'bin', 'teal-agent-server.js');
    expect(existsSync(join(ROOT, 'dist', 'cli.js'))).toBe(true); // built by scripts/test.sh
    const port = await freePort();
    child = spawn(
      process.execPath,
      ['--expose-gc', '--require', join(ROOT, 'test', 'support', 'heap-probe.cjs'), bin, 'serve', join(ROOT, 'demos', 'agents'), '--port', String(port)],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', TA_HOST: '127.0.0.1', TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'warn', TA_TASK_TTL_SECONDS: String(TTL_SECONDS) },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      },
    );
    base = `http://127.0.0.1:${port}/Assistant/0.1`;
    for (let i = 0; i < 400; i++) {
      if ((await request(`${base}/health/live`).catch(() => undefined))?.status === 200) return;
      await sleep(50);
    }
    throw new Error('the server did not start');
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((ok) => child.once('exit', ok));
      child.kill('SIGKILL');
      await exited;
    }
  });

  it('returns the heap to its baseline once every task has expired', async () => {
    // Warm up every path a task takes (routes, serialisation, the store) with small tasks: they are
    // part of the baseline, and expire with the rest.
    await createTasks(20, 'warm-up');
    const baseline = await heapUsed();

    const started = Date.now();
    await createTasks(TASKS);
    const loaded = await heapUsed();
    const loading = `${TASKS} tasks written in ${Date.now() - started} ms; heap ${(baseline / MiB).toFixed(1)} → ${(loaded / MiB).toFixed(1)} MiB`;
    // The whole load is really held while the tasks live (else the check below proves nothing).
    expect({ inTime: Date.now() - started < TTL_SECONDS * 1000, held: loaded - baseline > 30 * MiB, loading }).toEqual({ inTime: true, held: true, loading });

    // The TTL, then the sweep (every second, docs/configuration.md); 20 s leaves room on a busy machine.
    const after = await heapSettlesBelow(baseline + SLACK, TTL_SECONDS * 1000 + 20_000);
    const figures = `baseline ${(baseline / MiB).toFixed(1)} MiB, loaded ${(loaded / MiB).toFixed(1)} MiB, after expiry ${(after / MiB).toFixed(1)} MiB`;
    expect({ after: after - baseline <= SLACK, figures }).toEqual({ after: true, figures });
  });
});
