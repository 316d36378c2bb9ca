import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { unbundled } from './bundle-source';

/**
 * Self time from the .cpuprofile files `node --cpu-prof` writes (V8's format: a tree of nodes,
 * `samples` naming the node on top of the stack at each tick, `timeDeltas` in µs before each).
 */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  where: string;
  ms: number;
}

/**
 * Self time per function (name + url:line), summed over every profile in `dir`, most first. With
 * `lastMs`, only the samples of the profile's last `lastMs` ms count (the load, not the start-up).
 */
export function selfTimes(dir: string, lastMs = Infinity): { total: number; idle: number; functions: SelfTime[]; modules: SelfTime[] } {
  const byFunction = new Map<string, SelfTime>();
  const byModule = new Map<string, SelfTime>();
  let total = 0;
  let idle = 0;
  const add = (map: Map<string, SelfTime>, key: string, name: string, where: string, ms: number) => {
    const entry = map.get(key) ?? { name, where, ms: 0 };
    entry.ms += ms;
    map.set(key, entry);
  };
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    // Each sample's distance from the last one, in ms: the sum of the deltas after it.
    const fromEnd: number[] = new Array(profile.samples.length).fill(0);
    for (let i = profile.samples.length - 2; i >= 0; i--) fromEnd[i] = fromEnd[i + 1]! + (profile.timeDeltas[i + 1] ?? 0) / 1000;
    profile.samples.forEach((id, i) => {
      if (fromEnd[i]! > lastMs) return;
      const frame = frames.get(id)!;
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      total += ms;
      if (frame.functionName === '(idle)') return void (idle += ms);
      const { url, lineNumber } = unbundled(frame);
      const where = url ? `${shortUrl(url)}:${lineNumber + 1}` : '';
      const name = frame.functionName || '(anonymous)';
      add(byFunction, `${name} ${where}`, name, where, ms);
      const module = moduleOf(url, name);
      add(byModule, module, module, '', ms);
    });
  }
  const sorted = (map: Map<string, SelfTime>) => [...map.values()].sort((a, b) => b.ms - a.ms);
  return { total, idle, functions: sorted(byFunction), modules: sorted(byModule) };
}

function shortUrl(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + 1);
  const dist = path.indexOf('/dist/');
  return dist >= 0 ? path.slice(dist + 1) : path;
}

/** The npm package, our dist/<folder>, Node's internals, or V8's pseudo-frames (GC, program). */
function moduleOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const path = shortUrl(url);
  const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1]!;
  const ours = /^dist\/(?:src\/)?([^/]+)/.exec(path);
  if (ours) return `ours: ${ours[1]}`;
  return path.startsWith('node:') ? 'node internals' : path;
}

/** A Markdown table of the `top` functions by self time, and one of the modules. */
export function formatSelfTimes(dir: string, lastMs: number, top = 25): string {
  const { total, idle, functions, modules } = selfTimes(dir, lastMs);
  const busy = total - idle;
  const pct = (ms: number) => `${((100 * ms) / busy).toFixed(1)} %`;
  const lines = [
    `Profiled ${(total / 1000).toFixed(1)} s, of which ${(busy / 1000).toFixed(1)} s not idle; shares are of the non-idle time.`,
    '',
    `| # | self ms | share | function | where |`,
    '|---|---|---|---|---|',
    ...functions.slice(0, top).map((f, i) => `| ${i + 1} | ${f.ms.toFixed(0)} | ${pct(f.ms)} | ${f.name} | ${f.where} |`),
    '',
    '| module | self ms | share |',
    '|---|---|---|',
    ...modules.slice(0, 15).map((m) => `| ${m.name} | ${m.ms.toFixed(0)} | ${pct(m.ms)} |`),
  ];
  return lines.join('\n');
}
