/**
 * SOAK_BREAK's test build (bench/soak/soak-fleet.ts, breakBuild): the guarantee it names is patched
 * out of the Redis commit script the server runs. The built server is one file (dist/cli.js, made by
 * scripts/bundle-vendor.mjs, as scripts/test.sh builds it) holding its own copy of the script; a
 * patch of the script's module alone left that copy whole, and a soak of such a "test build" found
 * nothing (docs/reliability.md). Checked on a copy of the two built files: whichever holds the script
 * holds none of the checks afterwards.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { breakBuild } from '../../bench/soak/soak-fleet';
import { ensureBuilt } from '../support/built-cli';

const DIST = resolve(__dirname, '../../dist');
const MODULE = join('state', 'backends', 'redis', 'redis-commit.lua.js');
const CAS_CHECK = "if actual ~= expected then return { 'conflict', actual } end";
const WRITE_ID_CHECK = "if ARGV[10] ~= '' and cur[4] ~= ARGV[10] then return { 'conflict', actual } end";
const IDEMPOTENCY_CLAIM = "if ARGV[14] ~= '' then";

describe('SOAK_BREAK: the test build the soak runs', () => {
  let dir: string;
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'soak-break-'));
    mkdirSync(join(dir, 'state', 'backends', 'redis'), { recursive: true });
    copyFileSync(join(DIST, MODULE), join(dir, MODULE));
    copyFileSync(join(DIST, 'cli.js'), join(dir, 'cli.js'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  /** The files that hold the script: its module, and the one-file server when it was bundled. */
  const holders = () => [MODULE, ...(read('cli.js').includes(CAS_CHECK) ? ['cli.js'] : [])];

  it('cas: the compare-and-set on version and writeId is gone from every copy of the script', () => {
    const files = holders();
    breakBuild(dir, 'cas');
    for (const file of files) {
      const source = read(file);
      expect({ file, cas: source.includes(CAS_CHECK), writeId: source.includes(WRITE_ID_CHECK) }).toEqual({ file, cas: false, writeId: false });
      expect(source).toContain('(compare-and-set removed: SOAK_BREAK)');
      expect(source).toContain(IDEMPOTENCY_CLAIM);
    }
  });

  it('idempotency: the Idempotency-Key claim is gone from every copy, the compare-and-set kept', () => {
    const files = holders();
    breakBuild(dir, 'idempotency');
    for (const file of files) {
      const source = read(file);
      expect({ file, claim: source.includes(IDEMPOTENCY_CLAIM), cas: source.includes(CAS_CHECK) }).toEqual({ file, claim: false, cas: true });
    }
  });

  it('the one-file server, as scripts/test.sh builds it, holds the script (so the first case checks it)', () => {
    // scripts/test.sh bundles before Jest; a run of this file after tsc alone has a cli.js that requires the module.
    const bundled = read('cli.js').includes('dist/state/backends/redis/redis-commit.lua.js');
    expect(holders()).toEqual(bundled ? [MODULE, 'cli.js'] : [MODULE]);
  });
});
