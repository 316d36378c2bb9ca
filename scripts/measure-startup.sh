#!/usr/bin/env bash
# Measures the server's start-up time and idle memory, as a user runs it:
#   node bin/teal-agent-server.js serve demos/agents   (TA_AUTH_MODE=dev, memory state store)
# For each run: the time from spawn to the first 200 on /EchoAgent/0.1/health/live (polled every
# 5 ms), the CPU time the server had used by then (user + system, /proc/<pid>/stat: steadier than
# the wall time on a busy machine), the server's own `startup_ms` (from its "listening" log line:
# createApp + listen, without Node's start and module loading), and the RSS (`ps -o rss=`) after
# IDLE_S seconds of idling.
# Prints every run, then the medians.
#
# Node's compile cache (src/boot-compile-cache.ts) is as a user has it: off by default; with
# NODE_COMPILE_CACHE=<dir> on, warm after the first start (run 1 may be cold). COLD=1 gives every
# run a new, empty cache directory (a container's first start with the cache on).
#
# Usage: bash scripts/measure-startup.sh            (RUNS=5 IDLE_S=5 by default)
#        RUNS=9 IDLE_S=10 SKIP_BUILD=1 bash scripts/measure-startup.sh
#        COLD=1 RUNS=5 SKIP_BUILD=1 bash scripts/measure-startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/node24.sh
export RUNS="${RUNS:-5}" IDLE_S="${IDLE_S:-5}"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  npx tsc -p tsconfig.build.json
  node scripts/bundle-vendor.mjs >/dev/null
fi

node - <<'EOF'
const { spawn, execFileSync } = require('node:child_process');
const { createServer } = require('node:net');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const runs = Number(process.env.RUNS);
const idleMs = Number(process.env.IDLE_S) * 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** utime + stime of a process, in ms (fields 14 and 15 of /proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuMsOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function once() {
  const port = await freePort();
  const env = { ...process.env, TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'info', TA_HOST: '127.0.0.1', TA_PORT: String(port) };
  for (const k of ['TA_SERVICE_CONFIG', 'TA_OTEL_ENDPOINT', 'TA_STATE_STORE', 'NODE_ENV', 'NODE_OPTIONS']) delete env[k];
  const coldCache = process.env.COLD === '1' ? mkdtempSync(join(tmpdir(), 'ta-cold-cache-')) : undefined;
  if (coldCache) env.NODE_COMPILE_CACHE = coldCache;
  const started = performance.now();
  const child = spawn(process.execPath, ['bin/teal-agent-server.js', 'serve', 'demos/agents'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    const url = `http://127.0.0.1:${port}/EchoAgent/0.1/health/live`;
    let readyMs;
    let cpuMs;
    while (readyMs === undefined) {
      if (exited) throw new Error(`the server exited before answering:\n${output}`);
      if (performance.now() - started > 30_000) throw new Error(`no 200 from ${url} within 30 s:\n${output}`);
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status === 200) (readyMs = performance.now() - started), (cpuMs = cpuMsOf(child.pid));
      } catch {
        // not listening yet
      }
      if (readyMs === undefined) await sleep(5);
    }
    const listening = output
      .split('\n')
      .filter(Boolean)
      .map((l) => { try { return JSON.parse(l); } catch { return {}; } })
      .find((l) => l.msg === 'teal-agent-server listening');
    await sleep(idleMs);
    const rssKb = Number(execFileSync('ps', ['-o', 'rss=', '-p', String(child.pid)]).toString().trim());
    return { readyMs, cpuMs, startupMs: listening?.startup_ms, rssKb };
  } finally {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    if (coldCache) rmSync(coldCache, { recursive: true, force: true });
  }
}

(async () => {
  const cache =
    process.env.NODE_DISABLE_COMPILE_CACHE === '1' ? 'off (NODE_DISABLE_COMPILE_CACHE=1)'
    : process.env.COLD === '1' ? 'cold (a new directory each run)'
    : process.env.NODE_COMPILE_CACHE ? `warm after run 1 (${process.env.NODE_COMPILE_CACHE})`
    : 'off (the default; NODE_COMPILE_CACHE=<dir> turns it on)';
  console.log(`node ${process.version}, ${runs} runs, RSS after ${idleMs / 1000} s idle, compile cache ${cache}`);
  const results = [];
  for (let i = 1; i <= runs; i++) {
    const r = await once();
    results.push(r);
    console.log(
      `run ${i}: spawn→first 200 ${r.readyMs.toFixed(0)} ms (CPU ${r.cpuMs} ms), in-process startup_ms ${r.startupMs ?? '?'} ms, idle RSS ${(r.rssKb / 1024).toFixed(1)} MiB`,
    );
  }
  const startup = results.map((r) => r.startupMs).filter((v) => typeof v === 'number');
  console.log(
    `median: spawn→first 200 on /EchoAgent/0.1/health/live ${median(results.map((r) => r.readyMs)).toFixed(0)} ms ` +
      `(CPU ${median(results.map((r) => r.cpuMs))} ms); ` +
      `in-process startup ${startup.length ? median(startup) : '?'} ms; ` +
      `idle RSS ${(median(results.map((r) => r.rssKb)) / 1024).toFixed(1)} MiB`,
  );
})().catch((e) => {
  console.error(e.message);
  process.exit(1);
});
EOF
