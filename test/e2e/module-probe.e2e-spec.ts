/**
 * The module probe (test/support/module-probe.cjs) that boot-footprint reads must never be read
 * half written: here its write is made slow on purpose (slow-write.cjs writes half, waits, then
 * the rest), and the reader the boot-footprint test uses must still get the whole JSON.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProbeFile } from '../support/probe-file';

const SUPPORT = join(__dirname, '..', 'support');

it('a slow write of the probe file is read only once it is whole', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ta-module-probe-'));
  const file = join(dir, 'probe.json');
  const child = spawn(
    process.execPath,
    [
      '--require',
      join(SUPPORT, 'slow-write.cjs'),
      '--require',
      join(SUPPORT, 'module-probe.cjs'),
      '-e',
      'process.send?.("ready"); setInterval(() => {}, 1000)',
    ],
    {
      env: { ...process.env, NODE_OPTIONS: '', MODULE_PROBE_FILE: file },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    },
  );
  try {
    await new Promise((resolve) => child.once('message', resolve));
    child.kill('SIGUSR2');
    const probe = await readProbeFile<{ modules: string[]; builtins: string[] }>(file);
    expect(probe.modules.some((m) => m.endsWith('module-probe.cjs'))).toBe(true);
    expect(probe.builtins.length).toBeGreaterThan(0);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
