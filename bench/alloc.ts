import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unbundled } from './bundle-source';
import { getTurn, runLoad } from './load';
import { spawnWithPort } from './processes';
import { startOurs } from './subjects';

/**
 * Bytes allocated per request, by whose code allocated them (`BENCH_ENTRY=alloc npm run bench`).
 * Allocation is what GC time follows, and unlike CPU time it does not move with a busy machine, so
 * it tells whether a change made a turn lighter (docs/performance.md). Ours (memory store) serves
 * BENCH_ALLOC_REQUESTS (3000) v3 turns at 16 conversations after 2000 of warm-up (or, with
 * BENCH_ALLOC_TARGET=health, GET /health/live: the HTTP layer alone; with BENCH_ALLOC_TARGET=stream,
 * streamed turns: POST …/sse read to the end), under V8's sampling heap
 * profiler (bench/alloc-sampler.ts); each sampled allocation is charged to the innermost frame of
 * ours on its stack (file and function), else to the innermost package, else to Node.
 */
const REQUESTS = Number(process.env.BENCH_ALLOC_REQUESTS ?? 3000);
const TARGET = process.env.BENCH_ALLOC_TARGET ?? 'turn';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Who allocated, for one sample's stack (innermost last). */
function chargedTo(stack: ProfileNode['callFrame'][]): string {
  for (let i = stack.length - 1; i >= 0; i--) {
    const { functionName } = stack[i]!;
    const { url } = unbundled(stack[i]!);
    const ours = /\/dist\/(.*)$/.exec(url);
    if (ours && !url.includes('node_modules')) return `ours: ${ours[1]} ${functionName}`.trim();
  }
  for (let i = stack.length - 1; i >= 0; i--) {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(stack[i]!.url);
    if (pkg) return pkg[1]!;
  }
  return `node: ${stack.at(-1)?.functionName || '(anonymous)'}`;
}

export function allocationsBy(head: ProfileNode): Map<string, number> {
  const bytes = new Map<string, number>();
  const walk = (node: ProfileNode, stack: ProfileNode['callFrame'][]) => {
    const here = [...stack, node.callFrame];
    if (node.selfSize) {
      const who = chargedTo(here);
      bytes.set(who, (bytes.get(who) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, []);
  return bytes;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-alloc-'));
  const file = join(dir, 'alloc.heapprofile');
  const model = await spawnWithPort(join(__dirname, 'fast-model.server.js'), {});
  const ours = await startOurs({ name: 'memory', env: { TA_STATE_STORE: 'memory' } }, `http://127.0.0.1:${model.port}`, {
    nodeArgs: ['--require', join(__dirname, 'alloc-sampler.js')],
    extraEnv: { BENCH_ALLOC_PROFILE: file },
  });
  const request = TARGET === 'health' ? getTurn(`${ours.url}/health/live`) : TARGET === 'stream' ? ours.streamTurn! : ours.turn;
  try {
    await runLoad(request, 16, 2000);
    ours.proc.child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 300));
    await runLoad(request, 16, REQUESTS);
    ours.proc.child.kill('SIGUSR2');
    for (let waited = 0; !existsSync(file) && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500)); // the file is written whole before it is read
    const bytes = allocationsBy((JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode }).head);
    const total = [...bytes.values()].reduce((a, b) => a + b, 0);
    const kb = (b: number) => (b / 1024 / REQUESTS).toFixed(2);
    const lines = [
      `# Allocated per request: ours (memory), ${TARGET === 'health' ? 'GET /health/live' : TARGET === 'stream' ? 'streamed v3 turns' : 'v3 turns'}, ${REQUESTS} at 16 connections (${new Date().toISOString()})`,
      '',
      `${kb(total)} KB per request in all (V8's sampling heap profiler, one sample per 1 KiB, collected objects included).`,
      '',
      '| KB per request | share | allocated by |',
      '|---|---|---|',
      ...[...bytes]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 25)
        .map(([who, b]) => `| ${kb(b)} | ${((100 * b) / total).toFixed(1)} % | ${who} |`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await ours.proc.stop();
    await model.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
