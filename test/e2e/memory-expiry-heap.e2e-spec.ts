/**
 * The in-memory store gives back the memory of expired tasks. A real server process (the bin over
 * dist/, on the demo agents) runs with a short TA_TASK_TTL_SECONDS under `node --expose-gc` with
 * test/support/heap-probe.cjs preloaded, which answers an IPC 'heap' message with the live heap after
 * a full GC. ~50 MiB of task history is written; once every task has expired and the sweep has
 * passed, the heap must be back within a small slack of what it was before. The server's clock is
 * libfaketime's, read from a file: it stands still relative to the real one while the load is
 * written and measured, then jumps past the TTL, as if the TTL had passed (the test does not idle
 * through it); the server's own sweep then finds every task expired.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from '../support/http';
import { LIBFAKETIME } from '../support/faketime';
import { freePort } from '../support/services';
import { v3Client } from '../support/v3-client';

const ROOT = join(__dirname, '..', '..');
const MiB = 1024 * 1024;
const TASKS = 250;
/** Echoed back by the offline model, so each task holds it twice (the message and the answer). */
const MESSAGE = 'x'.repeat(200 * 1024);
/** Far longer than writing the load takes, on a busy machine: nothing expires before the clock jumps. */
const TTL_SECONDS = 120;
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

  /** The server's clock offset (libfaketime re-reads it at most once a second). */
  const clockFile = join(mkdtempSync(join(tmpdir(), 'expiry-clock-')), 'offset');

  beforeAll(async () => {
    const bin = join(ROOT, 'bin', 'teal-agent-server.js');
    expect(existsSync(join(ROOT, 'dist', 'cli.js'))).toBe(true); // built by scripts/test.sh
    expect(LIBFAKETIME).toBeDefined(); // apt-get install faketime (.ci/run does)
    writeFileSync(clockFile, '+0\n');
    const port = await freePort();
    child = spawn(
      process.execPath,
      ['--expose-gc', '--require', join(ROOT, 'test', 'support', 'heap-probe.cjs'), bin, 'serve', join(ROOT, 'demos', 'agents'), '--port', String(port)],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          TA_HOST: '127.0.0.1',
          TA_AUTH_MODE: 'dev',
          TA_LOG_LEVEL: 'warn',
          TA_TASK_TTL_SECONDS: String(TTL_SECONDS),
          // The wall clock only (Date.now and the like): timers keep the real pace.
          LD_PRELOAD: LIBFAKETIME!,
          FAKETIME_TIMESTAMP_FILE: clockFile,
          FAKETIME_CACHE_DURATION: '1',
          FAKETIME_DONT_FAKE_MONOTONIC: '1',
        },
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

    // The TTL passes at once on the server's clock; then the sweep (every second,
    // docs/configuration.md) and libfaketime's re-read (a second); 20 s leaves room on a busy machine.
    writeFileSync(clockFile, `+${TTL_SECONDS + 10}s\n`);
    const after = await heapSettlesBelow(baseline + SLACK, 20_000);
    const figures = `baseline ${(baseline / MiB).toFixed(1)} MiB, loaded ${(loaded / MiB).toFixed(1)} MiB, after expiry ${(after / MiB).toFixed(1)} MiB`;
    expect({ after: after - baseline <= SLACK, figures }).toEqual({ after: true, figures });
  });
});
