/**
 * The server's stdout log (src/common/logging/logger.ts, createLogger without a destination) in a
 * process of its own, its file writes counted: lines leave in batches of about LOG_BATCH_BYTES, a
 * lone line within LOG_FLUSH_MS, every line once and in order, and `flush` writes out the rest.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ensureBuilt } from '../support/built-cli';

const ROOT = resolve(__dirname, '../..');

/** Logs `burst` lines a millisecond apart, waits, logs one more, waits; prints the writes to fd 1 on stderr. */
const CHILD = `
const fs = require('node:fs');
const writes = [];
const write = fs.write;
fs.write = function (fd, ...rest) { if (fd === 1) writes.push(Date.now()); return write.call(this, fd, ...rest); };
const { createLogger } = require(${JSON.stringify(join(ROOT, 'dist/common/logging/logger.js'))});
const log = createLogger('info');
const burst = Number(process.argv[1]);
let i = 0;
const next = () => {
  log.info({ i, pad: 'x'.repeat(1000) }, 'line');
  if (++i < burst) setTimeout(next, 1);
  else setTimeout(rest, 300);
};
next();
const rest = () => {
  const afterBurst = writes.length;
  const lone = Date.now();
  log.info({ i: burst }, 'lone line');
  setTimeout(() => {
    const loneAt = writes.at(-1) - lone;
    log.info({ i: burst + 1 }, 'flushed at the end');
    log.flush(() => process.stderr.write(JSON.stringify({ afterBurst, total: writes.length, loneAt })));
  }, 300);
};
`;

describe('stdout log batching', () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it('writes 100 lines logged a millisecond apart in a few writes, a lone line within the flush time, every line once, in order', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['-e', CHILD, '100'], { cwd: ROOT });
    const counts = JSON.parse(stderr) as { afterBurst: number; total: number; loneAt: number };
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { i: number; msg: string });
    expect(lines.map((l) => l.i)).toEqual(Array.from({ length: 102 }, (_, i) => i));
    // ~1.1 KB lines: 100 of them are ~110 KB, about four 32 KiB batches and a flush per 100 ms
    // (a write per line would be about 100).
    expect(counts.afterBurst).toBeGreaterThanOrEqual(2);
    expect(counts.afterBurst).toBeLessThanOrEqual(20);
    expect(counts.loneAt).toBeLessThan(300);
    expect(counts.total).toBeLessThanOrEqual(counts.afterBurst + 2);
  });
  it('writes out the lines still waiting for their batch when the process exits', async () => {
    const child = `
const { createLogger } = require(${JSON.stringify(join(ROOT, 'dist/common/logging/logger.js'))});
const log = createLogger('info');
for (let i = 0; i < 3; i++) log.info({ i }, 'before exit');
setTimeout(() => { log.info({ i: 3 }, 'right before exit'); process.exit(3); }, 20);
`;
    const exited = await promisify(execFile)(process.execPath, ['-e', child], { cwd: ROOT }).catch((e: { code: number; stdout: string }) => e);
    expect((exited as { code?: number }).code).toBe(3);
    const lines = exited.stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { i: number }).i);
    expect(lines).toEqual([0, 1, 2, 3]);
  });
});
