import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureBuilt } from '../support/built-cli';
import { artifactDir } from '../support/test-artifacts';

/**
 * The short soak of the test command (issue 28): `npm run soak`'s program (bench/soak/soak-run.ts,
 * docs/reliability.md) with 2 replicas of the built server on one Redis, a fixed seed and about
 * two minutes of turns under faults (kill -9 and restart of a replica, the store paused, clients
 * dropping connections and retrying), then the independent checker over what the clients saw and
 * what the store holds. Any violation fails the run; so does a soak in which the faults did not
 * happen, or too few turns were made to mean anything.
 */
const ROOT = resolve(__dirname, '../..');
const SOAK_SECONDS = 100;
const SOAK = join(ROOT, 'dist-bench', 'bench', 'soak', 'soak-run.js');

/** The soak's program, compiled as `npm run soak` compiles it (dist-bench/, beside dist/). */
function ensureSoakBuilt(): void {
  const built = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.bench.json')], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (built.status !== 0 || !existsSync(SOAK)) throw new Error(`the soak did not build: ${built.stdout}${built.stderr}`);
}

function runSoak(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [SOAK], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolvePromise({ code, output }));
  });
}

/** A count from a report line such as `- kill -9 and restart: 2` or `| follow-on | 1587 |` (0 when absent). */
function countOf(report: string, pattern: RegExp): number {
  return [...report.matchAll(pattern)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('the short soak: 2 replicas on Redis under faults, checked by the independent checker', () => {
  let dir: string | undefined;
  beforeAll(() => {
    ensureBuilt();
    ensureSoakBuilt();
    dir = mkdtempSync(join(tmpdir(), 'short-soak-'));
  }, 120_000);
  // KEEP_SOAK_REPORT=1 keeps the report (its directory is named in the failure) to read after the run.
  afterAll(() => (process.env.KEEP_SOAK_REPORT || !dir ? undefined : rmSync(dir, { recursive: true, force: true })));

  it(
    'finds no violation, in a run where replicas were killed and the store faulted',
    async () => {
      const report = join(dir!, 'soak-report.md');
      const { code, output } = await runSoak({
        SOAK_STORE: 'redis',
        SOAK_SEED: '1',
        SOAK_REPLICAS: '2',
        SOAK_CONVERSATIONS: '60',
        SOAK_CLIENTS: '8',
        SOAK_SECONDS: String(SOAK_SECONDS),
        SOAK_FAULT_GAP_MS: '4000',
        SOAK_REPORT: report,
      });
      const text = existsSync(report) ? readFileSync(report, 'utf8') : '';
      const violations = /## Violations: (\d+)/.exec(text)?.[1];
      // On a failure the message shows the report's violations, each with the operations that show it
      // (or, with no report, the end of what the soak printed).
      let detail = code === 0 && violations === '0' ? '' : text ? text.slice(text.indexOf('## Violations')) : output.slice(-4000);
      // A failed run's whole report (its faults, its figures and every violation) is kept with the
      // run's other artifacts: the test run removes its temporary directory, and this one with it.
      if (detail && text) {
        const kept = join(artifactDir('short-soak'), 'soak-report.md');
        copyFileSync(report, kept);
        detail += `\n(the whole report: ${kept})`;
      }
      expect({ code, violations, detail }).toEqual({ code: 0, violations: '0', detail: '' });
      expect(countOf(text, /\| follow-on \| (\d+) \|/g)).toBeGreaterThan(500);
      expect(countOf(text, /- kill -9 and restart: (\d+)/g)).toBeGreaterThanOrEqual(1);
      // A store fault: paused (all, or writes only) or restarted.
      expect(countOf(text, /- store [^:]*: (\d+)/g)).toBeGreaterThanOrEqual(1);
    },
    (SOAK_SECONDS + 150) * 1000,
  );
});
