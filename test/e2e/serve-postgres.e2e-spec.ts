/**
 * Issue 22's "done when", as a user runs it: the built server (`teal-agent-server serve`, what
 * `bash scripts/start.sh` runs once it has built) with `TA_STATE_STORE=postgres` and a
 * `TA_POSTGRES_URL`, on the demo agents, the embedded defaults otherwise (dev auth, the offline
 * model). The schema is new: the boot migrates it. Turns land in PostgreSQL's tables, and the
 * server is visible to a DBA by its application_name.
 */
import { join } from 'node:path';
import { Client } from 'pg';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { request } from '../support/http';
import { testPostgresUrl, uniqueSchema } from '../support/services';
import { v3Client } from '../support/v3-client';

const ROOT = join(__dirname, '..', '..');
jest.setTimeout(60_000);

describe('teal-agent-server serve on PostgreSQL (the demo agents)', () => {
  const schema = uniqueSchema('serve_pg');
  let raw: Client;
  let server: CliRun;
  let base: string;

  beforeAll(async () => {
    ensureBuilt();
    raw = new Client({ connectionString: testPostgresUrl() });
    await raw.connect();
    server = runCli(['serve', join(ROOT, 'demos', 'agents'), '--port', '0'], {
      TA_AUTH_MODE: 'dev',
      TA_LOG_LEVEL: 'info',
      TA_STATE_STORE: 'postgres',
      TA_POSTGRES_URL: testPostgresUrl(),
      TA_POSTGRES_SCHEMA: schema,
    });
    base = `http://127.0.0.1:${await server.listening()}`;
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    await raw?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await raw?.end();
  });

  it('boots on a new schema (migrated), serves every demo agent, and says which store it uses', async () => {
    const listening = server.logs().find((l) => l.msg === 'teal-agent-server listening');
    expect(listening).toMatchObject({ state_store: 'postgres', auth_mode: 'dev', agents: expect.arrayContaining(['/Assistant/0.1']) });
    const index = await request(`${base}/`, { headers: { accept: 'application/json' } });
    expect(index.status).toBe(200);
    expect(index.body.agents.length).toBe(7);
    const { rows } = await raw.query<{ version: number }>(`SELECT max(version) AS version FROM ${schema}.schema_version`);
    expect(rows[0]!.version).toBeGreaterThanOrEqual(1);
  });

  it('a turn and its follow-on are stored in PostgreSQL, by a connection a DBA can name', async () => {
    const assistant = v3Client(`${base}/Assistant/0.1`);
    const first = await assistant.say('hello from postgres');
    expect([first.status, first.body.status]).toEqual([200, 'Completed']);
    const second = await assistant.say('and again', { task_id: first.body.task_id });
    expect([second.status, second.body.status]).toEqual([200, 'Completed']);

    const stored = await raw.query<{ seq: number }>(`SELECT seq FROM ${schema}.requests WHERE task_id = $1 ORDER BY seq`, [first.body.task_id]);
    expect(stored.rows.map((r) => Number(r.seq))).toEqual([0, 1]);
    const read = await assistant.task(first.body.task_id);
    expect(read.body.requests.map((r: { status: string }) => r.status)).toEqual(['Completed', 'Completed']);

    const seen = await raw.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'teal-agent-server'`);
    expect(Number(seen.rows[0]!.n)).toBeGreaterThanOrEqual(1);
  });
});
