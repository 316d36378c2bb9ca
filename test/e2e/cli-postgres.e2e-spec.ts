import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { SCHEMA_VERSION } from '../../src/state/backends/postgres/migrations/migration-list';
import { testPostgresUrl, uniqueSchema } from '../support/services';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const bin = join(ROOT, 'bin', 'teal-agent-server.js');

async function migrate(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [bin, 'migrate'], { env: { PATH: process.env.PATH ?? '', ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

// Each test starts the built CLI two or three times: seconds on a machine whose cores are busy.
jest.setTimeout(60_000);

describe('teal-agent-server migrate', () => {
  const schema = uniqueSchema('cli_migrate');
  let raw: Client;
  beforeAll(async () => {
    raw = new Client({ connectionString: testPostgresUrl() });
    await raw.connect();
  });
  afterAll(async () => {
    await raw.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await raw.end();
  });

  it('brings the schema to this release’s version once, and finds it there the second time', async () => {
    expect(existsSync(join(ROOT, 'dist', 'cli.js'))).toBe(true); // built by scripts/test.sh
    const env = { TA_POSTGRES_URL: testPostgresUrl(), TA_POSTGRES_SCHEMA: schema };
    expect(await migrate(env)).toEqual({ code: 0, stdout: `PostgreSQL schema ${schema}: migrated from version 0 to ${SCHEMA_VERSION}\n`, stderr: '' });
    expect(await migrate(env)).toEqual({ code: 0, stdout: `PostgreSQL schema ${schema} is at version ${SCHEMA_VERSION}: nothing to migrate\n`, stderr: '' });
    const { rows } = await raw.query(`SELECT max(version) AS version FROM ${schema}.schema_version`);
    expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
  });

  it('exits 1 with one line when PostgreSQL cannot be reached, or TA_POSTGRES_URL is missing', async () => {
    expect(await migrate({ TA_POSTGRES_URL: 'postgres://postgres@127.0.0.1:9/postgres' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Could not migrate the PostgreSQL schema: PostgreSQL is unreachable at 127.0.0.1:9/postgres (ECONNREFUSED)\n',
    });
    expect(await migrate({})).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Could not migrate the PostgreSQL schema: TA_POSTGRES_URL is required (a postgres:// connection string)\n',
    });
  });
});
