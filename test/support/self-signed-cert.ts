import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate for `host` made by openssl (a missing openssl is an error naming it, never a skip). */
export function selfSignedCert(host: string): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ta-test-tls-'));
  try {
    const args = ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${host}`];
    const made = spawnSync('openssl', [...args, '-addext', `subjectAltName=DNS:${host}`, '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], {
      encoding: 'utf8',
    });
    if (made.status !== 0) throw new Error(`openssl could not make a test certificate (install the openssl package): ${made.error?.message ?? made.stderr}`);
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
