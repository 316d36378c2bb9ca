import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * What the kernel says about a process, read from /proc so the servers under test need no code for
 * the benchmark: CPU time (user + sys) and resident memory.
 */

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ; 100 on Linux almost always). */
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User + system CPU time the process has used so far, in ms (resolution 1000 / CLK_TCK ms). */
export function cpuMs(pid: number): number {
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
