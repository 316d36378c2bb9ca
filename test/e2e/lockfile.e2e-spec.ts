/**
 * The committed lockfile is what `npm ci` installs (scripts/ensure-deps.sh, the Dockerfile, the
 * image smoke): it must be in step with package.json. `npm ci --dry-run` checks exactly that and
 * installs nothing; it runs on a copy of the two files, so node_modules is left alone. The second
 * case shows the check can fail: a lockfile missing one package is refused.
 *
 * `--offline`: the check is between the two files, and nothing else. Without it npm looks the
 * missing package up in the registry before it refuses the lockfile, and where the registry cannot
 * be reached (no network, or no trusted CA for a proxy: `.ci/run` under `env -i` here) it retried
 * for ~70 s before the same answer; offline it answers in ~1 s either way.
 *
 * `--cache` (an empty one of the check's own): what npm answers offline for the refused lockfile
 * depends on what its cache holds. With yaml's registry entry cached (a machine that once ran
 * `npm install yaml`) it names the package the lockfile lacks (`Missing: yaml@…`); without it, on a
 * fresh machine whose cache holds only what `npm ci` fetched (tarballs, no registry entries), it
 * stops at looking yaml up (`ENOTCACHED`, the request to …/yaml). An empty cache gives the second
 * answer everywhere, and the committed lockfile needs nothing from a cache to be accepted.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

function npmCiDryRun(lock: string) {
  const dir = mkdtempSync(join(tmpdir(), 'ta-lockfile-'));
  try {
    copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    writeFileSync(join(dir, 'package-lock.json'), lock);
    const r = spawnSync('npm', ['ci', '--dry-run', '--offline', '--cache', join(dir, 'cache'), '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const committed = readFileSync(join(ROOT, 'package-lock.json'), 'utf8');

it('npm ci accepts the committed lockfile', () => {
  const r = npmCiDryRun(committed);
  expect({ status: r.status, output: r.status === 0 ? '' : r.output }).toEqual({ status: 0, output: '' });
}, 130_000);

it('npm ci refuses a lockfile that lacks a package package.json needs (so the check above can fail)', () => {
  const lock = JSON.parse(committed) as { packages: Record<string, unknown> };
  delete lock.packages['node_modules/yaml'];
  const r = npmCiDryRun(JSON.stringify(lock, null, 2));
  expect(r.status).not.toBe(0);
  // npm looked up the one package the lockfile lacks (or, from a cache that holds its entry, named it).
  expect(r.output).toMatch(/request to \S+\/yaml failed: cache mode is 'only-if-cached'|Missing: yaml@/);
}, 130_000);
