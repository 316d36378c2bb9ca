import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocationsBy } from '../../bench/alloc';

// BENCH_ENTRY=alloc's accounting: each sampled allocation is charged to the innermost frame of
// ours on its stack, else to the innermost package, else to Node, and all of it is counted once.

type Node = Parameters<typeof allocationsBy>[0];
const frame = (functionName: string, url: string, selfSize: number, children: Node[] = [], lineNumber = 0): Node => ({
  callFrame: { functionName, url, lineNumber, columnNumber: 0 },
  selfSize,
  children,
});

describe('allocationsBy', () => {
  const ROOT = '/work/x';
  const profile = frame('(root)', '', 0, [
    frame('handle', `file://${ROOT}/node_modules/express/lib/application.js`, 100, [
      frame('run', `file://${ROOT}/dist/tasks/run/request-runner.service.js`, 10, [
        // A package called by ours: charged to ours, the innermost frame of ours.
        frame('subscribe', `file://${ROOT}/node_modules/rxjs/dist/cjs/internal/Observable.js`, 7, [frame('', 'node:internal/streams/writable', 3)]),
      ]),
      frame('json', `file://${ROOT}/node_modules/express/lib/response.js`, 20),
    ]),
    frame('processTicksAndRejections', 'node:internal/process/task_queues', 5),
  ]);

  it('charges each allocation to the innermost frame of ours, else of a package, else of Node', () => {
    expect(Object.fromEntries(allocationsBy(profile))).toEqual({
      express: 120,
      'ours: tasks/run/request-runner.service.js run': 20,
      'node: processTicksAndRejections': 5,
    });
  });

  it('charges a frame of the one-file server (dist/cli.js) to the dist file its source map names', () => {
    const root = mkdtempSync(join(tmpdir(), 'ta-alloc-map-'));
    try {
      mkdirSync(join(root, 'dist'));
      // Line 0 of the bundle comes from cli.js, line 1 from the request runner (a VLQ mapping each).
      writeFileSync(
        join(root, 'dist', 'cli.js.map'),
        JSON.stringify({ version: 3, file: 'cli.js', names: [], sources: ['cli.js', 'tasks/run/request-runner.service.js'], mappings: 'AAAA;ACAA' }),
      );
      const bundle = `file://${root}/dist/cli.js`;
      const bundled = frame('(root)', '', 0, [frame('runCli', bundle, 0, [frame('run', bundle, 30, [], 1)]), frame('runCli', bundle, 4)]);
      expect(Object.fromEntries(allocationsBy(bundled))).toEqual({ 'ours: tasks/run/request-runner.service.js run': 30, 'ours: cli.js runCli': 4 });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('counts every byte once', () => {
    const total = [...allocationsBy(profile).values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(100 + 10 + 7 + 3 + 20 + 5);
  });
});
