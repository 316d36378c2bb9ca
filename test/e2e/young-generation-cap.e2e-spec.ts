import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * The young generation of a listening server is capped at YOUNG_GENERATION_CAP_BYTES (src/boot-heap.ts,
 * issue 27): V8 would grow it to 128 MiB under load. A node process that allocates as a busy server
 * does (short-lived garbage, with some of it kept, as a store keeps each turn) reports the largest
 * young generation it reached, with the cap and without it, and with an operator's own sizing flag
 * (which the cap leaves alone).
 */
const ROOT = resolve(__dirname, '../..');
const MIB = 1024 * 1024;

function largestYoungGeneration(cap: boolean, nodeArgs: string[] = []): { largest: number; capBytes: number } {
  const script = `
    const { capYoungGeneration, YOUNG_GENERATION_CAP_BYTES } = require(${JSON.stringify(resolve(ROOT, 'dist/boot-heap.js'))});
    const { getHeapSpaceStatistics } = require('node:v8');
    if (${cap}) capYoungGeneration(YOUNG_GENERATION_CAP_BYTES);
    const kept = [];
    let largest = 0;
    let garbage;
    (async () => {
      for (let round = 0; round < 60; round++) {
        for (let i = 0; i < 100000; i++) {
          garbage = { i, text: 'turn ' + i, parts: [i, i + 1] };
          if (i % 50 === 0) kept.push(garbage);
        }
        if (kept.length > 200000) kept.length = 0;
        largest = Math.max(largest, getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
        // The observer's callbacks run between turns of the event loop, as on a server.
        await new Promise((r) => setImmediate(r));
      }
      process.stdout.write(JSON.stringify({ largest, capBytes: YOUNG_GENERATION_CAP_BYTES }));
    })();
  `;
  return JSON.parse(execFileSync(process.execPath, [...nodeArgs, '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })) as {
    largest: number;
    capBytes: number;
  };
}

describe('the young generation of a server under load', () => {
  it('grows past the cap without it (V8 alone), and stays within the cap with it', () => {
    const uncapped = largestYoungGeneration(false);
    const capped = largestYoungGeneration(true);
    expect(capped.capBytes).toBe(32 * MIB);
    // Without the cap V8 doubles it past 32 MiB (to 128 here) ...
    expect(uncapped.largest).toBeGreaterThanOrEqual(2 * capped.capBytes);
    // ... with it, the semi-spaces stop at 2 × 16 MiB. The space's reported size can be a few pages
    // over that (33.75 MiB on one machine, every run; the uncapped one read 35 between 32 and 64):
    // V8's own extra pages beside the semi-spaces, not a doubling, which would read 64.
    expect(capped.largest).toBeLessThanOrEqual(capped.capBytes + 4 * MIB);
    // It still grows well beyond its 1 MiB start: capped, not frozen.
    expect(capped.largest).toBeGreaterThanOrEqual(capped.capBytes / 2);
  });

  it("an operator's own young-generation flag wins: the cap steps aside", () => {
    const theirs = largestYoungGeneration(true, ['--max-semi-space-size=64']);
    expect(theirs.largest).toBeGreaterThan(theirs.capBytes);
  });
});
