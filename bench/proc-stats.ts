import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * What the kernel says about a process, read from /proc so the servers under test need no code for
 * the benchmark: CPU time (user + sys) and resident memory.
 */

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ; 100 on Linux almost always). */
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * CPU time the process has used so far, in ms: the sum over its threads of the kernel's
 * nanosecond run-time account (/proc/<pid>/task/<tid>/schedstat, first field). /proc/<pid>/stat's
 * user + sys count in clock ticks of 10 ms, too coarse for a phase of ~150 ms of CPU (c=1: rounds of
 * one target swung 1.1×–2.0×). A thread that exits takes its time with it; the servers measured here
 * keep theirs (the main thread, V8's and libuv's pools) for their life. Where schedstat cannot be
 * read, the tick count.
 */
export function cpuMs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread exited between the listing and the read
      }
    }
    if (ns > 0) return ns / 1e6;
  } catch {
    // no /proc/<pid>/task: fall back to the tick count
  }
  return tickCpuMs(pid);
}

/** User + system CPU time from /proc/<pid>/stat, in ms (resolution 1000 / CLK_TCK ms; all threads, exited ones too). */
export function tickCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]); // field 14 of proc(5)
  const stime = Number(fields[12]); // field 15
  return ((utime + stime) * 1000) / CLK_TCK;
}

/** Resident set size in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** The machine's CPU time so far from /proc/stat's first line, in ticks: busy (waiting for disk counted busy) and all. */
function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  const n = fields.map(Number); // user nice system idle iowait irq softirq steal ...
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - n[3]!, total };
}

/**
 * Waits until the whole machine is quiet: less than `maxBusy` of its CPU time busy (or waiting for
 * disk) over `windowMs`, at most `timeoutMs` (then it goes on). A start-up timed right after a
 * store's server started measures that server too: DynamoDB Local's JVM compiling, PostgreSQL's
 * freshly initialised files being written back (the spawn times of one run moved 500 → 750 ms).
 * Returns how long it waited, in ms.
 */
export async function untilQuiet({ maxBusy = 0.15, windowMs = 250, timeoutMs = 10_000 } = {}): Promise<number> {
  const started = Date.now();
  for (;;) {
    const a = machineTicks();
    await new Promise((r) => setTimeout(r, windowMs));
    const b = machineTicks();
    const share = b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : 0;
    if (share < maxBusy || Date.now() - started >= timeoutMs) return Date.now() - started;
  }
}
