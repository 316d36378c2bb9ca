import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits for a file a probe in another process writes (module-probe.cjs on SIGUSR2) and parses it.
 * The probe writes a temporary file and renames it, so the name appears only once the JSON is
 * whole: a reader never sees half of it, however loaded the machine (a direct write was once read
 * at 48 KiB of a longer file: `Unterminated string in JSON`).
 */
export async function readProbeFile<T>(file: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`the probe wrote no ${file} within ${timeoutMs} ms`);
    await sleep(25);
  }
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}
