import { ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

/**
 * The container image's build and start, without a container engine: scripts/image-smoke.sh
 * performs the Dockerfile's steps in fresh directories (a production-only install, the built
 * output, a non-root user), then probes the HEALTHCHECK, an agent call and SIGTERM. Slow (the
 * production-only install from the npm cache and a full build): a minute, not seconds.
 */
const ROOT = resolve(__dirname, '../..');
const TIMEOUT_MS = 12 * 60_000;

describe('the container image (scripts/image-smoke.sh)', () => {
  let child: ChildProcess | undefined;
  // On a timeout, end the script and the server it started (its own process group), not just bash.
  afterAll(() => {
    if (child?.exitCode === null && child.pid) process.kill(-child.pid, 'SIGTERM');
  });

  it(
    'builds, starts as a non-root user from the production install, serves, and stops on SIGTERM',
    async () => {
      // [B1]'s install is the run's own (scripts/ensure-deps.sh, the same lockfile), shared; [R1]'s
      // production-only install, the one the image runs on, is made afresh.
      const env = { ...process.env, IMAGE_SMOKE_SHARED_DEPS: '1' };
      const run = spawn('bash', [join(ROOT, 'scripts', 'image-smoke.sh')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      child = run;
      let output = '';
      run.stdout.on('data', (c) => (output += String(c)));
      run.stderr.on('data', (c) => (output += String(c)));
      const code = await new Promise<number | null>((ok) => run.once('exit', (c) => ok(c)));
      // The script's own step log is the failure message: it names the Dockerfile step that broke.
      expect({ code, output }).toEqual({ code: 0, output: expect.stringMatching(/image-smoke: ok \(exit status 0 after SIGTERM\)/) });
      for (const step of ['[B1]', '[B2]', '[R1]', '[R2]', '[R5]', '[R4]']) expect(output).toContain(`image-smoke: ${step}`);
    },
    TIMEOUT_MS,
  );
});
