import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * A listening server lowers V8's invocation count for Turbofan (src/boot-tiering.ts, issue 27), so
 * a turn's functions reach their optimized code within the first few thousand turns instead of
 * ~10,000. A node process calls 40 functions 6,000 times each, a hundred calls per turn of the
 * event loop as a server's turns come, and counts those whose code is Turbofan's at the end (V8's
 * own `%ActiveTierIsTurbofan`). One function's tier-up point varies from run to run; forty of them
 * do not: measured, 34-40 with the lower count and 0 with V8's own tiering, every run.
 */
const ROOT = resolve(__dirname, '../..');
const FUNCTIONS = 40;

function turbofanned(sooner: boolean, nodeArgs: string[] = []): number {
  const script = `
    const { tierUpSooner } = require(${JSON.stringify(resolve(ROOT, 'dist/boot-tiering.js'))});
    if (${sooner}) tierUpSooner();
    const fns = Array.from({ length: ${FUNCTIONS} }, (_, k) => new Function('o', 'return o.a * ' + (k + 2) + ' + o.b.length + (o.c ? ' + k + ' : 1);'));
    // Not optimized itself, so that it cannot inline the functions it calls.
    function batch(from) { for (let i = from; i < from + 100; i++) for (const f of fns) f({ a: i, b: 'xy', c: i & 1 }); }
    %NeverOptimizeFunction(batch);
    (async () => {
      for (let i = 0; i < 6000; i += 100) { batch(i); await new Promise((r) => setImmediate(r)); }
      // Turbofan compiles on worker threads: wait for the compilations started to be installed.
      %FinalizeOptimization();
      process.stdout.write(String(fns.filter((f) => %ActiveTierIsTurbofan(f)).length));
    })();
  `;
  return Number(
    execFileSync(process.execPath, ['--allow-natives-syntax', ...nodeArgs, '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } }),
  );
}

describe("V8's tiering in a listening server", () => {
  it('functions as hot as a turn reach Turbofan with tierUpSooner; with V8 alone they do not yet', () => {
    expect(turbofanned(true)).toBeGreaterThanOrEqual(FUNCTIONS * 0.7);
    expect(turbofanned(false)).toBeLessThanOrEqual(FUNCTIONS * 0.15);
  });

  it("an operator's own --invocation-count-for-turbofan wins", () => {
    expect(turbofanned(true, ['--invocation-count-for-turbofan=100000'])).toBeLessThanOrEqual(FUNCTIONS * 0.15);
  });
});
