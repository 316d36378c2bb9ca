import { spawn } from 'node:child_process';
import { untilQuiet } from '../../bench/proc-stats';

// The bench times each start-up on a quiet machine (bench/run.ts, spawnToReady): untilQuiet waits
// while the machine's CPUs are busy, and never longer than its timeout.

describe('untilQuiet', () => {
  it('waits while every CPU is busy, until the busy processes end', async () => {
    // Two busy loops (this machine's cores) for 1.2 s: not quiet under 50 % busy until they end.
    const busy = [0, 1].map(() => spawn(process.execPath, ['-e', 'const end = Date.now() + 1200; while (Date.now() < end);'], { stdio: 'ignore' }));
    await new Promise((r) => setTimeout(r, 100));
    // At most 3 s: in the full test run other tests keep the machine busy, and then it goes on.
    const waited = await untilQuiet({ maxBusy: 0.5, windowMs: 200, timeoutMs: 3_000 });
    await Promise.all(busy.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    expect(waited).toBeGreaterThanOrEqual(800);
    expect(waited).toBeLessThan(3_000 + 1_000);
  }, 15_000);

  it('goes on after its timeout on a machine that stays busy', async () => {
    const started = Date.now();
    const waited = await untilQuiet({ maxBusy: 0, windowMs: 100, timeoutMs: 400 }); // never quiet: 0 % busy
    expect(waited).toBeGreaterThanOrEqual(400);
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});
