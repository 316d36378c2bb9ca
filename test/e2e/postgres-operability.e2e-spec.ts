/**
 * Operating the server on PostgreSQL (issue 22, point 6; docs/deploy.md, PostgreSQL): readiness
 * reports the database (the `state_store` dependency, as on Redis and DynamoDB) and turns 503 while
 * PostgreSQL is stopped, until it is back; `GET /metrics` counts the calls that waited for a pooled
 * connection and the store's failures; and a managed server's TLS as docs/deploy.md configures it:
 * `sslmode=verify-full` with the CA bundle as `sslrootcert`, or PG* variables with the bundle in
 * NODE_EXTRA_CA_CERTS, migrated by `teal-agent-server migrate` and served with TA_POSTGRES_MIGRATE=off.
 * Real PostgreSQL throughout: the run's shared server, and servers of this file's own to stop or to
 * put TLS on.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { createApp } from '../../src/app.factory';
import { loadEnvConfig } from '../../src/config/env.config';
import { SCHEMA_VERSION } from '../../src/state/backends/postgres/migrations/migration-list';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { ensureBuilt, runCli } from '../support/built-cli';
import { request } from '../support/http';
import { parsePrometheusText, PromFamily, total } from '../support/prometheus-text';
import { PostgresServerHandle, startPostgresServer, testPostgresUrl, uniqueSchema } from '../support/services';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const AGENTS = {
  'keeper.yaml': `
apiVersion: tealagents/v1alpha1
name: Keeper
version: 1
description: PostgreSQL operability e2e
spec:
  agent:
    name: default
    model: local/echo
`,
};

/** The server's environment on PostgreSQL, metrics on; no lease sweep, so the store sees only the test's calls. */
const onPostgres = (url: string, schema: string, extra: Record<string, string> = {}) => ({
  TA_STATE_STORE: 'postgres',
  TA_POSTGRES_URL: url,
  TA_POSTGRES_SCHEMA: schema,
  TA_METRICS_PROMETHEUS: 'true',
  TA_LEASE_SWEEP_MS: '0',
  ...extra,
});

async function scrape(t: TestApp): Promise<Map<string, PromFamily>> {
  const res = await request(`${t.url}/metrics`);
  expect(res.status).toBe(200);
  return parsePrometheusText(res.text);
}

/** One metric's value (summed over the samples whose labels include `labels`). */
const metric = (m: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}, sample = name) => total(m, name, sample, labels);
const waits = (m: Map<string, PromFamily>, outcome: string) => metric(m, 'ta_state_store_pool_waits_total', { outcome });
const unavailable = (m: Map<string, PromFamily>) => metric(m, 'ta_state_store_errors_total', { error_type: 'STATE_STORE_UNAVAILABLE' });

async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
    await sleep(25);
    last = await read();
  }
  return last;
}

const connect = async (url: string) => {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
};

describe('a server on PostgreSQL (TA_STATE_STORE=postgres): readiness, pg_stat_activity and the pool metrics', () => {
  const schema = uniqueSchema('ops');
  let t: TestApp;
  let admin: Client;

  beforeAll(async () => {
    admin = await connect(testPostgresUrl());
    // One connection, so a call that finds it busy waits; a wait gives up after 1.2 s, well within readiness's 2 s per check.
    t = await startTestApp({
      agents: AGENTS,
      env: onPostgres(testPostgresUrl(), schema, {
        TA_POSTGRES_POOL_MAX: '1',
        TA_POSTGRES_ACQUIRE_TIMEOUT_MS: '1200',
        TA_POSTGRES_STATEMENT_TIMEOUT_MS: '15000',
      }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await admin?.end();
  });

  it('is ready with the store up, stores turns in its schema, shows in pg_stat_activity, and exports the pool at 0 waits', async () => {
    const root = await request(`${t.url}/health/ready`);
    expect(root.status).toBe(200);
    expect(root.body.dependencies).toEqual([
      { name: 'config', state: 'up' },
      { name: 'state_store', state: 'up' },
    ]);
    const agent = await request(`${t.url}/Keeper/1/health/ready`);
    expect([agent.status, agent.body.checks]).toEqual([200, { config: { status: 'up' }, state_store: { status: 'up' } }]);

    const turn = await v3Client(`${t.url}/Keeper/1`).say('hello');
    expect(turn.status).toBe(200);
    const stored = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE task_id = $1`, [turn.body.task_id]);
    expect(stored.rows).toEqual([{ n: 1 }]);
    const seen = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'teal-agent-server' AND datname = current_database()`,
    );
    expect(seen.rows[0].n).toBeGreaterThanOrEqual(1);

    const m = await scrape(t);
    expect(m.get('ta_state_store_pool_waits_total')?.type).toBe('counter');
    expect([waits(m, 'acquired'), waits(m, 'failed')]).toEqual([0, 0]);
    expect(m.get('ta_state_store_pool_waiting')?.type).toBe('gauge');
    expect(metric(m, 'ta_state_store_pool_waiting')).toBe(0);
    expect(metric(m, 'ta_state_store_pool_max')).toBe(1);
    expect(metric(m, 'ta_state_store_pool_connections', { state: 'used' })).toBe(0);
    expect(metric(m, 'ta_state_store_pool_connections', { state: 'idle' })).toBe(1);
    expect(unavailable(m)).toBe(0);
  });

  it('counts a call that found the only connection busy: failed after the acquire timeout (readiness 503, naming it), acquired once it is freed', async () => {
    const api = v3Client(`${t.url}/Keeper/1`);
    const locker = await connect(testPostgresUrl());
    try {
      // A turn that holds the pool's one connection: its write waits on a lock a DBA's session holds.
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE ${schema}.tasks IN ACCESS EXCLUSIVE MODE`);
      const blocked = api.say('blocked behind a lock');
      await until(
        'the turn waiting on the lock',
        async () =>
          (
            await admin.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'teal-agent-server' AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`,
              [schema],
            )
          ).rows[0].n,
        (n) => n === 1,
      );
      let m = await scrape(t);
      expect(metric(m, 'ta_state_store_pool_connections', { state: 'used' })).toBe(1);
      const before = { acquired: waits(m, 'acquired'), failed: waits(m, 'failed') };

      // Readiness's ping waits for a connection, and gives up after TA_POSTGRES_ACQUIRE_TIMEOUT_MS.
      const started = Date.now();
      const notReady = await request(`${t.url}/health/ready`);
      const waited = Date.now() - started;
      expect(notReady.status).toBe(503);
      expect(notReady.body.dependencies).toContainEqual({
        name: 'state_store',
        state: 'down',
        detail: expect.stringMatching(/^PostgreSQL is unavailable: timeout exceeded when trying to connect/),
      });
      expect(waited).toBeGreaterThanOrEqual(1150);
      expect(waited).toBeLessThan(2500);
      m = await scrape(t);
      expect({ acquired: waits(m, 'acquired'), failed: waits(m, 'failed') }).toEqual({ acquired: before.acquired, failed: before.failed + 1 });
      expect(metric(m, 'ta_state_store_pool_wait_duration', { outcome: 'failed' }, 'ta_state_store_pool_wait_duration_sum')).toBeGreaterThanOrEqual(1.15);

      // Again, but the lock is released while the ping waits: it gets the connection.
      const ready = request(`${t.url}/health/ready`);
      m = await until(
        'a call waiting',
        () => scrape(t),
        (now) => metric(now, 'ta_state_store_pool_waiting') === 1,
      );
      await locker.query('COMMIT');
      expect((await ready).status).toBe(200);
      expect((await blocked).status).toBe(200);
      m = await scrape(t);
      // The ping, and maybe the turn's next write, which found the ping on the connection.
      expect(waits(m, 'acquired')).toBeGreaterThanOrEqual(before.acquired + 1);
      expect(waits(m, 'failed')).toBe(before.failed + 1);
      expect(metric(m, 'ta_state_store_pool_wait_duration', { outcome: 'acquired' }, 'ta_state_store_pool_wait_duration_count')).toBe(waits(m, 'acquired'));
      expect(metric(m, 'ta_state_store_pool_waiting')).toBe(0);
      expect(unavailable(m)).toBe(0); // a readiness probe is not a caller's failure
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  }, 30_000);
});

// Its own PostgreSQL, so stopping it disturbs no other test file.
describe('a server on PostgreSQL when PostgreSQL is stopped and started again', () => {
  const password = 's3cret-pw'; // the test server trusts every local login; the password must still never be shown
  let pg: PostgresServerHandle;
  let t: TestApp;

  beforeAll(async () => {
    pg = await startPostgresServer();
    t = await startTestApp({
      agents: AGENTS,
      env: onPostgres(`postgres://postgres:${password}@127.0.0.1:${pg.port}/postgres`, 'ops', { TA_POSTGRES_ACQUIRE_TIMEOUT_MS: '1000' }),
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await pg?.stop();
  });

  it('readiness turns 503 naming the store while it is down (requests 503 STATE_STORE_UNAVAILABLE, counted), and 200 again once it is back, data kept', async () => {
    const api = v3Client(`${t.url}/Keeper/1`);
    expect((await request(`${t.url}/health/ready`)).status).toBe(200);
    const first = await api.say('before');
    expect(first.status).toBe(200);
    const taskId = first.body.task_id as string;
    const errorsBefore = unavailable(await scrape(t));

    await pg.halt('immediate');
    const started = Date.now();
    const root = await request(`${t.url}/health/ready`);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(root.status).toBe(503);
    expect(root.body.dependencies).toEqual([
      { name: 'config', state: 'up' },
      { name: 'state_store', state: 'down', detail: expect.stringMatching(/^PostgreSQL is unavailable: /) },
    ]);
    const agent = await request(`${t.url}/Keeper/1/health/ready`);
    expect([agent.status, agent.body.checks.state_store.status]).toEqual([503, 'down']);
    expect((await request(`${t.url}/health/live`)).status).toBe(200); // not a reason to restart the pod
    const followOn = await api.say('during', { task_id: taskId });
    const read = await api.task(taskId);
    for (const res of [followOn, read]) expect([res.status, res.body.code]).toEqual([503, 'STATE_STORE_UNAVAILABLE']);
    // Answered to a caller: counted. Readiness probes are not.
    expect(unavailable(await scrape(t))).toBe(errorsBefore + 2);
    for (const text of [root.text, agent.text, followOn.text, read.text, t.rawLogs()]) expect(text).not.toContain(password);

    await pg.start();
    const back = await until(
      'readiness after the restart',
      () => request(`${t.url}/health/ready`),
      (res) => res.status === 200,
      15_000,
    );
    expect(back.body.dependencies).toContainEqual({ name: 'state_store', state: 'up' });
    const after = await api.say('after', { task_id: taskId });
    expect(after.status).toBe(200);
    expect(after.body.task_id).toBe(taskId);
  }, 60_000);
});

/** The line a boot refused for its PostgreSQL's certificate shows (Node's own words in between, which vary between Node versions). */
const untrusted = (at: string, node: string) =>
  new RegExp(
    `^PostgreSQL's TLS certificate is not trusted at ${literal(at)}: ${node}.* \\(docs/deploy\\.md, PostgreSQL: sslrootcert or NODE_EXTRA_CA_CERTS\\)$`,
  );
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A CA and a server certificate it signed for `localhost` (openssl), and a second CA that signed nothing of ours. */
function makeCertificates(dir: string, owner: { uid: number; gid: number } | undefined) {
  const openssl = (...args: string[]) => {
    const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (run.error) throw new Error(`openssl is needed for the TLS tests (the Debian package openssl): ${run.error.message}`);
    if (run.status !== 0) throw new Error(`openssl ${args[0]} failed: ${run.stderr}`);
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=teal-agent-server test CA');
  openssl('req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.pem', '-days', '2', '-subj', '/CN=another CA');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName = DNS:localhost\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  );
  // PostgreSQL reads its key only when no one else may: its own user's, mode 0600.
  chmodSync(join(dir, 'server.key'), 0o600);
  if (owner) for (const f of ['', 'server.key', 'server.crt']) chownSync(join(dir, f), owner.uid, owner.gid);
  return { ca: join(dir, 'ca.pem'), otherCa: join(dir, 'other-ca.pem'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
}

/** The ids of the user PostgreSQL runs as when the tests run as root (test/support/services.ts). */
function postgresOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

describe('a managed PostgreSQL over TLS, as docs/deploy.md configures it (a server of its own with ssl on)', () => {
  let pg: PostgresServerHandle;
  let admin: Client;
  let dir: string;
  let certs: ReturnType<typeof makeCertificates>;
  const tlsUrl = (ca: string, host = 'localhost') =>
    `postgres://postgres@${host}:${pg.port}/postgres?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;

  beforeAll(async () => {
    ensureBuilt();
    pg = await startPostgresServer();
    dir = mkdtempSync(join(tmpdir(), 'pg-tls-'));
    certs = makeCertificates(dir, postgresOwner());
    admin = await connect(pg.url);
    for (const [name, value] of [
      ['ssl_cert_file', certs.cert],
      ['ssl_key_file', certs.key],
      ['ssl', 'on'],
    ]) {
      await admin.query(`ALTER SYSTEM SET ${name} = ${admin.escapeLiteral(value!)}`);
    }
    await admin.query('SELECT pg_reload_conf()');
    await until(
      'ssl on after the reload',
      async () => (await admin.query('SHOW ssl')).rows[0].ssl as string,
      (ssl) => ssl === 'on',
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the server's log ends: ${pg.log().trim().split('\n').slice(-3).join(' / ')}`);
    });
  }, 60_000);
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    await pg?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('sslmode=verify-full with the CA bundle as sslrootcert: the server connects over TLS and is ready', async () => {
    const t = await startTestApp({ agents: AGENTS, env: onPostgres(tlsUrl(certs.ca), 'tls') });
    try {
      expect((await request(`${t.url}/health/ready`)).status).toBe(200);
      expect((await v3Client(`${t.url}/Keeper/1`).say('over TLS')).status).toBe(200);
      const { rows } = await admin.query(
        `SELECT count(*)::int AS n, bool_and(s.ssl) AS ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'teal-agent-server'`,
      );
      expect(rows).toEqual([{ n: expect.any(Number), ssl: true }]);
      expect(rows[0].n).toBeGreaterThanOrEqual(1);
    } finally {
      await t.close();
    }
  });

  it('refuses the boot in one line when the certificate is not signed by the bundle, or does not name the host connected to', async () => {
    const boot = (url: string) => createApp({ env: loadEnvConfig({ TA_AUTH_MODE: 'dev', ...onPostgres(url, 'tls') }), configPath: writeAgentDir(AGENTS) });
    const otherCa = (await boot(tlsUrl(certs.otherCa)).catch((e: unknown) => e)) as Error;
    expect(otherCa.message).toMatch(untrusted(`localhost:${pg.port}/postgres`, 'unable to verify the first certificate'));
    const wrongHost = (await boot(tlsUrl(certs.ca, '127.0.0.1')).catch((e: unknown) => e)) as Error;
    expect(wrongHost.message).toMatch(untrusted(`127.0.0.1:${pg.port}/postgres`, "Hostname/IP does not match certificate's altnames"));
  });

  it('PG* variables with TA_POSTGRES_URL=postgres:// and the CA in NODE_EXTRA_CA_CERTS: migrate (the deploy Job), then serve with TA_POSTGRES_MIGRATE=off', async () => {
    const schema = 'from_env';
    const pgEnv = {
      TA_POSTGRES_URL: 'postgres://',
      TA_POSTGRES_SCHEMA: schema,
      PGHOST: 'localhost',
      PGPORT: String(pg.port),
      PGUSER: 'postgres',
      PGDATABASE: 'postgres',
    };
    const tls = { PGSSLMODE: 'verify-full', NODE_EXTRA_CA_CERTS: certs.ca };
    const migrate = async (env: Record<string, string>) => {
      const run = runCli(['migrate'], env);
      return { ...(await run.exited), stdout: run.stdout(), stderr: run.stderr() };
    };

    // node-postgres does not read PGSSLROOTCERT: without the CA in Node's list, verify-full refuses the server.
    const refused = await migrate({ ...pgEnv, PGSSLMODE: 'verify-full', PGSSLROOTCERT: certs.ca });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr.split('\n')).toEqual([expect.stringMatching(/^Could not migrate the PostgreSQL schema: /), '']);
    expect(refused.stderr.slice('Could not migrate the PostgreSQL schema: '.length, -1)).toMatch(
      untrusted('(PGHOST)', 'unable to verify the first certificate'),
    );

    expect(await migrate({ ...pgEnv, ...tls })).toEqual({
      code: 0,
      signal: null,
      stdout: `PostgreSQL schema ${schema}: migrated from version 0 to ${SCHEMA_VERSION}\n`,
      stderr: '',
    });

    const server = runCli(['serve', writeAgentDir(AGENTS), '--port', '0'], {
      ...pgEnv,
      ...tls,
      TA_STATE_STORE: 'postgres',
      TA_POSTGRES_MIGRATE: 'off',
      TA_AUTH_MODE: 'dev',
      TA_LOG_LEVEL: 'info',
    });
    try {
      const port = await server.listening();
      expect(server.logs().find((l) => l.msg === 'teal-agent-server listening')).toMatchObject({ state_store: 'postgres' });
      const ready = await request(`http://127.0.0.1:${port}/health/ready`);
      expect([ready.status, ready.body.dependencies]).toEqual([
        200,
        [
          { name: 'config', state: 'up' },
          { name: 'state_store', state: 'up' },
        ],
      ]);
      expect((await v3Client(`http://127.0.0.1:${port}/Keeper/1`).say('hello')).status).toBe(200);
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${schema}.tasks`);
      expect(rows).toEqual([{ n: 1 }]);
      const overTls = await admin.query(
        `SELECT bool_and(s.ssl) AS ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'teal-agent-server'`,
      );
      expect(overTls.rows).toEqual([{ ssl: true }]);
    } finally {
      await server.stop();
    }
  }, 60_000);
});

/** The grants docs/deploy.md (PostgreSQL, Migrations from a deploy job) gives the servers' role: its ```sql block, for `schema` and `role`. */
function documentedGrants(schema: string, role: string): string {
  const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'deploy.md'), 'utf8');
  const blocks = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks).toHaveLength(1);
  return blocks[0]!.replaceAll('teal_agent_app', role).replaceAll('teal_agent', schema);
}

describe("least privilege: migrated by the schema's owner (the deploy Job), served by a role granted what docs/deploy.md says", () => {
  const schema = uniqueSchema('grants');
  const owner = `${schema}_owner`;
  const app = `${schema}_app`;
  const as = (role: string) => {
    const url = new URL(testPostgresUrl());
    url.username = role;
    return url.href;
  };
  let admin: Client;
  let t: TestApp | undefined;

  beforeAll(async () => {
    ensureBuilt();
    admin = await connect(testPostgresUrl());
    await admin.query(`CREATE ROLE ${owner} LOGIN`);
    await admin.query(`CREATE ROLE ${app} LOGIN`);
    await admin.query(`GRANT CREATE ON DATABASE ${admin.database} TO ${owner}`);
  });
  afterAll(async () => {
    await t?.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    for (const role of [app, owner]) {
      await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
      await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    }
    await admin.end();
  });

  it('a role that may not create refuses to migrate at boot, and with TA_POSTGRES_MIGRATE=off serves every kind of call once the owner migrated and granted', async () => {
    const migrate = runCli(['migrate'], { TA_POSTGRES_URL: as(owner), TA_POSTGRES_SCHEMA: schema });
    expect({ ...(await migrate.exited), stderr: migrate.stderr() }).toEqual({ code: 0, signal: null, stderr: '' });
    const ownerClient = await connect(as(owner));
    try {
      await ownerClient.query(documentedGrants(schema, app));
      // What a later release's migration creates is granted too (the default privileges).
      await ownerClient.query(`CREATE TABLE ${schema}.later (id bigserial PRIMARY KEY, note text)`);
    } finally {
      await ownerClient.end();
    }
    const appClient = await connect(as(app));
    try {
      await appClient.query(`INSERT INTO ${schema}.later (note) VALUES ('a later table')`);
      expect((await appClient.query(`DELETE FROM ${schema}.later RETURNING note`)).rows).toEqual([{ note: 'a later table' }]);
      await expect(appClient.query(`CREATE TABLE ${schema}.mine (x int)`)).rejects.toThrow(/permission denied for schema/);
    } finally {
      await appClient.end();
    }
    const refused = await createApp({
      env: loadEnvConfig({ TA_AUTH_MODE: 'dev', ...onPostgres(as(app), `${schema}_new`) }),
      configPath: writeAgentDir(AGENTS),
    }).catch((e: unknown) => e as Error);
    expect((refused as Error).message).toMatch(/^PostgreSQL refused to migrate schema \S+_new at .*permission denied for database/);

    t = await startTestApp({ agents: AGENTS, env: onPostgres(as(app), schema, { TA_POSTGRES_MIGRATE: 'off', TA_TASK_TTL_SECONDS: '3600' }) });
    const api = v3Client(`${t.url}/Keeper/1`);
    expect((await request(`${t.url}/health/ready`)).status).toBe(200);
    const first = await api.say('hello');
    expect(first.status).toBe(200);
    const taskId = first.body.task_id as string;
    expect((await api.say('again', { task_id: taskId })).status).toBe(200);
    expect((await api.task(taskId)).status).toBe(200);
    expect((await request(`${t.url}/Keeper/1/sessions`)).status).toBe(200);
    expect((await request(`${t.url}/Keeper/1/sessions/${first.body.session_id}`)).status).toBe(200);
    expect((await request(`${t.url}/Keeper/1/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(204);
    expect((await api.task(taskId)).status).toBe(404);
    // The expiry sweep and the lease listing, as the servers' role.
    const store = new PostgresStateStore({ url: as(app), schema, sweepMs: 0 });
    try {
      expect(await store.sweepExpired()).toBeGreaterThanOrEqual(0);
      expect(await store.listLapsedLeases(Date.now(), { limit: 10 })).toEqual({ items: [] });
    } finally {
      await store.close();
    }
  }, 60_000);
});
