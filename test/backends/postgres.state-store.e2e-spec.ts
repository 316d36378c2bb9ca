import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { PARSES, postgresCountingProxy } from '../../bench/postgres-counter';
import { loadEnvConfig } from '../../src/config/env.config';
import { BackendBootError } from '../../src/state/backend-boot-error';
import { MIGRATION_0001 } from '../../src/state/backends/postgres/migrations/0001-init.sql';
import { MIGRATION_0002 } from '../../src/state/backends/postgres/migrations/0002-archive-index.sql';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/state/backends/postgres/migrations/migration-list';
import { APPLICATION_NAME, PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { createStateStore } from '../../src/state/state-store.factory';
import { IdempotencyEntry } from '../../src/state/state.entities';
import { StateCorruptError, VersionConflictError } from '../../src/state/state.errors';
import { describeStateStoreConformance } from '../conformance/state-store.conformance';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { testPostgresUrl, uniqueName, uniqueSchema } from '../support/services';

// Every table of this file is in its own schema, so it shares the run's PostgreSQL with other files.
const schema = uniqueSchema('ta_test');
let raw: Client;
// The contract's cases open several stores at once, each with new connections: on a machine busy
// with the rest of the test run, a backend's start can pass the 2 s default wait for a connection
// (seen once: a 503 among the racing claims of one idempotency key). They test the contract, not
// that wait (postgres-faults.e2e-spec.ts does), so they wait longer.
const newStore = (options: Partial<ConstructorParameters<typeof PostgresStateStore>[0]> = {}) =>
  new PostgresStateStore({ url: testPostgresUrl(), schema, acquireTimeoutMs: 15_000, ...options });

beforeAll(async () => {
  raw = new Client({ connectionString: testPostgresUrl() });
  await raw.connect();
  const store = newStore();
  await store.prepare();
  await store.close();
}, 60_000);
afterAll(async () => {
  await raw.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await raw.end();
});

/** Rows of one tenant in the store's tables (deletion leaves none, unless the tenant claimed Idempotency-Keys). */
async function countRows(tenantId: string, inSchema = schema): Promise<number> {
  const { rows } = await raw.query<{ n: string }>(
    `SELECT (SELECT count(*) FROM ${inSchema}.tasks WHERE tenant_id = $1) + (SELECT count(*) FROM ${inSchema}.requests WHERE tenant_id = $1)
      + (SELECT count(*) FROM ${inSchema}.stream_events WHERE tenant_id = $1) + (SELECT count(*) FROM ${inSchema}.idempotency_keys WHERE tenant_id = $1) AS n`,
    [tenantId],
  );
  return Number(rows[0].n);
}

/** An Idempotency-Key entry for `taskId` under a fresh key, expiring at `expiresAt` (epoch ms). */
function entryFor(taskId: string, expiresAt: number): IdempotencyEntry {
  return { key: `k-${randomUUID()}`, fingerprint: 'f1', operation: 'turn', taskId, createdAt: Date.now(), expiresAt };
}

describeStateStoreConformance('postgres', {
  createStore: async () => newStore(),
  createArchiveStore: async () => newStore({ archiveIndex: true }),
  rawRequest: async (tenantId, taskId, seq) => {
    const { rows } = await raw.query<{ data: string }>(`SELECT data FROM ${schema}.requests WHERE tenant_id = $1 AND task_id = $2 AND seq = $3`, [
      tenantId,
      taskId,
      seq,
    ]);
    return rows[0]?.data;
  },
  countStored: (tenantId) => countRows(tenantId),
});

describe('PostgresStateStore', () => {
  let store: PostgresStateStore;
  beforeAll(() => {
    store = newStore();
  });
  afterAll(() => store.close());

  async function seeded() {
    const tenant = uniqueName('tenant');
    const task = makeTask(tenant);
    const request = makeRequest(task, 0);
    await store.commit(tenant, { task, expectedVersion: 0, requests: [request] });
    return { tenant, task, request };
  }

  it('reports an unparseable header or request as StateCorruptError and leaves it untouched', async () => {
    const { tenant, task, request } = await seeded();
    await raw.query(`UPDATE ${schema}.tasks SET data = '{"taskId": garbage' WHERE tenant_id = $1`, [tenant]);
    await raw.query(`UPDATE ${schema}.requests SET data = '[1,2]' WHERE tenant_id = $1`, [tenant]);

    const err = await store.getTask(tenant, task.taskId).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(StateCorruptError);
    expect(err).toMatchObject({ code: 'STATE_CORRUPT', key: `${schema}.tasks (${JSON.stringify(tenant)}, ${JSON.stringify(task.taskId)})` });
    await expect(store.listSessionTasks(tenant, task.ownerId, task.sessionId, { limit: 5 })).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.listRequests(tenant, task.taskId)).rejects.toBeInstanceOf(StateCorruptError);
    await expect(store.getRequest(tenant, request.requestId)).rejects.toBeInstanceOf(StateCorruptError);
    const { rows } = await raw.query(
      `SELECT h.data AS header, r.data AS request FROM ${schema}.tasks h JOIN ${schema}.requests r USING (tenant_id, task_id) WHERE tenant_id = $1`,
      [tenant],
    );
    expect(rows).toEqual([{ header: '{"taskId": garbage', request: '[1,2]' }]);
  });

  it('connects as application_name teal-agent-server, so a DBA finds its connections in pg_stat_activity', async () => {
    await store.ping();
    const { rows } = await raw.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1`, [APPLICATION_NAME]);
    expect(rows[0].n).toBeGreaterThan(0);
  });

  it.each([
    { prepared: true, parses: 1 },
    { prepared: false, parses: 7 },
  ])(
    'commits as a named prepared statement, parsed once per connection (preparedStatements $prepared: $parses parses of 7 commits); a stale one conflicts either way',
    async ({ prepared, parses }) => {
      // Through the bench's counter, which reads the wire protocol: Parse messages and, per Bind, the function called.
      const proxy = await postgresCountingProxy(Number(new URL(testPostgresUrl()).port));
      const counted = new PostgresStateStore({ url: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`, schema, poolMax: 1, preparedStatements: prepared });
      try {
        const tenant = uniqueName('tenant');
        const created = makeTask(tenant);
        let task = await counted.commit(tenant, { task: created, expectedVersion: 0, requests: [makeRequest(created, 0)] });
        for (let seq = 1; seq < 6; seq++) {
          const write = { task: { ...task, requestCount: seq + 1, writeId: randomUUID() }, expectedWriteId: task.writeId, requests: [makeRequest(task, seq)] };
          task = await counted.commit(tenant, { ...write, expectedVersion: task.version });
        }
        const stale = { task: { ...task, writeId: randomUUID() }, expectedVersion: task.version - 1, requests: [makeRequest(task, 6)] };
        await expect(counted.commit(tenant, stale)).rejects.toBeInstanceOf(VersionConflictError);
        expect(await proxy.snapshot()).toMatchObject({ commit_task: 7, [PARSES]: parses });
        expect(await counted.listRequests(tenant, task.taskId)).toHaveLength(6);
      } finally {
        await counted.close();
        await proxy.close();
      }
    },
  );

  describe('migrations', () => {
    const other = () => uniqueSchema('ta_migrate');
    const dropped: string[] = [];
    afterAll(async () => {
      for (const s of dropped) await raw.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
    });

    it('N replicas booting together on an empty database migrate it once; booting again changes nothing', async () => {
      const fresh = other();
      dropped.push(fresh);
      const replicas = Array.from({ length: 4 }, () => newStore({ schema: fresh }));
      try {
        const outcomes = await Promise.all(replicas.map((r) => r.prepare()));
        expect(outcomes.filter((o) => o.from === 0)).toHaveLength(1);
        expect(outcomes.every((o) => o.to === SCHEMA_VERSION)).toBe(true);
        const { rows } = await raw.query(`SELECT version, name FROM ${fresh}.schema_version ORDER BY version`);
        expect(rows).toEqual(MIGRATIONS.map(({ version, name }) => ({ version, name })));
        expect(await replicas[0].prepare()).toEqual({ schema: fresh, from: SCHEMA_VERSION, to: SCHEMA_VERSION });
        expect(await replicas[1].prepare('off')).toEqual({ schema: fresh, from: SCHEMA_VERSION, to: SCHEMA_VERSION });
      } finally {
        await Promise.all(replicas.map((r) => r.close()));
      }
    }, 30_000);

    it("a schema at version 1 holding tasks migrates in place: they stay, the previous release's commit_task still commits, and only commits since are listed as unarchived", async () => {
      const fresh = other();
      dropped.push(fresh);
      await raw.query(`CREATE SCHEMA ${fresh}`);
      await raw.query(`CREATE TABLE ${fresh}.schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await raw.query(MIGRATION_0001.sql(fresh));
      await raw.query(`INSERT INTO ${fresh}.schema_version (version, name) VALUES (1, 'init')`);
      const tenant = uniqueName('tenant');
      const task = makeTask(tenant);
      // As the previous release commits: commit_task of migration 1 (15 arguments).
      const oldCommit = async (expected: number) => {
        const { rows } = await raw.query<{ outcome: string }>(
          `SELECT outcome FROM ${fresh}.commit_task($1, $2, $3, NULL, NULL, $4, $5, NULL, NULL, false, 0, $6, ARRAY[]::integer[], ARRAY[]::text[], ARRAY[]::text[])`,
          [tenant, task.taskId, expected, task.ownerId, task.sessionId, JSON.stringify({ ...task, version: expected + 1 })],
        );
        return rows[0].outcome;
      };
      expect(await oldCommit(0)).toBe('ok');

      const store = newStore({ schema: fresh, archiveIndex: true });
      try {
        expect(await store.prepare()).toEqual({ schema: fresh, from: 1, to: SCHEMA_VERSION });
        expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 1 });
        expect(await store.listUnarchived(Date.now() + 3_600_000, { limit: 10 })).toEqual({ items: [] });
        expect(await oldCommit(1)).toBe('ok');
        expect(await store.listUnarchived(Date.now() + 3_600_000, { limit: 10 })).toEqual({ items: [] });
        await store.commit(tenant, { task, expectedVersion: 2 });
        expect((await store.listUnarchived(Date.now() + 3_600_000, { limit: 10 })).items).toEqual([
          { tenantId: tenant, taskId: task.taskId, version: 3, changedAt: expect.any(Number) },
        ]);
      } finally {
        await store.close();
      }
    });

    it("a schema at version 2 migrates in place: the previous release's commit_task (no claim) still commits, and commits since claim Idempotency-Keys", async () => {
      const fresh = other();
      dropped.push(fresh);
      await raw.query(`CREATE SCHEMA ${fresh}`);
      await raw.query(`CREATE TABLE ${fresh}.schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await raw.query(MIGRATION_0001.sql(fresh));
      await raw.query(MIGRATION_0002.sql(fresh));
      await raw.query(`INSERT INTO ${fresh}.schema_version (version, name) VALUES (1, 'init'), (2, 'archive-index')`);
      const tenant = uniqueName('tenant');
      const task = makeTask(tenant);
      // As the previous release commits: commit_task of migration 2 (16 arguments).
      const oldCommit = async (expected: number) => {
        const { rows } = await raw.query<{ outcome: string }>(
          `SELECT outcome FROM ${fresh}.commit_task($1, $2, $3, NULL, NULL, $4, $5, NULL, NULL, false, 0, $6, false, ARRAY[]::integer[], ARRAY[]::text[], ARRAY[]::text[])`,
          [tenant, task.taskId, expected, task.ownerId, task.sessionId, JSON.stringify({ ...task, version: expected + 1 })],
        );
        return rows[0].outcome;
      };
      expect(await oldCommit(0)).toBe('ok');

      const store = newStore({ schema: fresh });
      try {
        expect(await store.prepare()).toEqual({ schema: fresh, from: 2, to: SCHEMA_VERSION });
        expect(await oldCommit(1)).toBe('ok');
        const entry = entryFor(task.taskId, store.now() + 60_000);
        await expect(store.commit(tenant, { task, expectedVersion: 2, idempotency: entry })).resolves.toMatchObject({ version: 3 });
        expect(await store.getIdempotencyEntry(tenant, entry.key)).toEqual(entry);
        expect(await oldCommit(3)).toBe('ok');
        expect(await store.getTask(tenant, task.taskId)).toMatchObject({ version: 4 });
      } finally {
        await store.close();
      }
    });

    it('a role that may only read and write boots on a migrated schema; one that may not create the schema gets one line saying so', async () => {
      const role = uniqueSchema('ta_app');
      const fresh = other();
      await raw.query(`CREATE ROLE ${role} LOGIN`);
      await raw.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
      await raw.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
      await raw.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}`);
      const url = new URL(testPostgresUrl());
      url.username = role;
      const env = { TA_AUTH_MODE: 'dev', TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: url.href };
      try {
        const app = await createStateStore(loadEnvConfig({ ...env, TA_POSTGRES_SCHEMA: schema }).state);
        const tenant = uniqueName('tenant');
        await expect(app.commit(tenant, { task: makeTask(tenant), expectedVersion: 0 })).resolves.toMatchObject({ version: 1 });
        await app.close();

        const err = await createStateStore(loadEnvConfig({ ...env, TA_POSTGRES_SCHEMA: fresh }).state).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BackendBootError);
        expect((err as Error).message).toMatch(
          new RegExp(
            `^PostgreSQL refused to migrate schema ${fresh} at 127\\.0\\.0\\.1:\\d+/postgres: permission denied for database postgres \\(grant the role CREATE`,
          ),
        );
      } finally {
        await raw.query(`DROP OWNED BY ${role}`);
        await raw.query(`DROP ROLE ${role}`);
      }
    });

    it('with TA_POSTGRES_MIGRATE=off, a schema that is not there refuses the boot, in one line naming the command', async () => {
      const absent = newStore({ schema: other() });
      try {
        const err = await absent.prepare('off').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(BackendBootError);
        expect((err as Error).message).toMatch(new RegExp(`is at version 0, this teal-agent-server needs ${SCHEMA_VERSION}: run "teal-agent-server migrate"`));
      } finally {
        await absent.close();
      }
    });

    it('a schema newer than this release knows refuses the boot, in one line', async () => {
      const newer = other();
      dropped.push(newer);
      const ahead = newStore({ schema: newer });
      try {
        await ahead.prepare();
        await raw.query(`INSERT INTO ${newer}.schema_version (version, name) VALUES ($1, 'from the future')`, [SCHEMA_VERSION + 1]);
        for (const mode of ['auto', 'off'] as const) {
          const err = await ahead.prepare(mode).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(BackendBootError);
          expect((err as Error).message).toBe(
            `PostgreSQL schema ${newer} is at version ${SCHEMA_VERSION + 1}, newer than this teal-agent-server knows (${SCHEMA_VERSION}): run a release that knows it`,
          );
        }
      } finally {
        await ahead.close();
      }
    });
  });

  describe('expiry sweep', () => {
    it('removes expired tasks in bounded steps, requests first and the header last; live tasks stay', async () => {
      const sweeper = newStore({ sweepBatch: 10, sweepMs: 0 });
      try {
        const tenant = uniqueName('tenant');
        const past = new Date(Date.now() - 60_000).toISOString();
        const doomed = makeTask(tenant, { requestCount: 25 });
        const kept = makeTask(tenant, { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
        await store.commit(tenant, { task: doomed, expectedVersion: 0, requests: Array.from({ length: 25 }, (_, seq) => makeRequest(doomed, seq)) });
        await store.appendStreamEvents(tenant, doomed.taskId, 0, [{ n: 0, event: 'e', data: {} }]);
        await store.commit(tenant, { task: { ...doomed, expiresAt: past }, expectedVersion: 1 });
        await store.commit(tenant, { task: kept, expectedVersion: 0, requests: [makeRequest(kept, 0)] });
        expect(await countRows(tenant)).toBe(1 + 25 + 1 + 1 + 1);

        // Other cases' expired tasks share the schema: step until this tenant's are gone.
        const steps: number[] = [];
        for (let i = 0; i < 50 && (await countRows(tenant)) > 2; i++) steps.push(await sweeper.sweepExpired());
        expect(Math.max(...steps)).toBeLessThanOrEqual(10);
        expect(await countRows(tenant)).toBe(2);
        expect(await store.getTask(tenant, kept.taskId)).toMatchObject({ taskId: kept.taskId });
      } finally {
        await sweeper.close();
      }
    });

    it('removes expired Idempotency-Key entries in the same bounded steps; live entries, and the tasks that claimed them, stay', async () => {
      const sweeper = newStore({ sweepBatch: 10, sweepMs: 0 });
      try {
        const tenant = uniqueName('tenant');
        // Claimed already expired (so they read as missing at once), but stored all the same.
        for (let i = 0; i < 25; i++) {
          const task = makeTask(tenant, { sessionId: `s-${i}` });
          await store.commit(tenant, { task, expectedVersion: 0, idempotency: entryFor(task.taskId, store.now() - 60_000) });
        }
        const task = makeTask(tenant, { sessionId: 's-live' });
        const live = entryFor(task.taskId, store.now() + 3_600_000);
        await store.commit(tenant, { task, expectedVersion: 0, idempotency: live });
        expect(await countRows(tenant)).toBe(26 + 26);

        // Other cases' expired entries and tasks share the schema: step until this tenant's are gone.
        const steps: number[] = [];
        for (let i = 0; i < 50 && (await countRows(tenant)) > 26 + 1; i++) steps.push(await sweeper.sweepExpired());
        expect(Math.max(...steps)).toBeLessThanOrEqual(10);
        expect(await countRows(tenant)).toBe(26 + 1);
        expect(await store.getIdempotencyEntry(tenant, live.key)).toEqual(live);
      } finally {
        await sweeper.close();
      }
    });

    it('one replica sweeps at a time: while another holds the lock, a step does nothing', async () => {
      const admin = new Client({ connectionString: testPostgresUrl() });
      await admin.connect();
      try {
        await admin.query('BEGIN');
        await admin.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`teal-agent-server sweep ${schema}`]);
        expect(await store.sweepExpired()).toBe(-1);
        await admin.query('COMMIT');
        expect(await store.sweepExpired()).toBeGreaterThanOrEqual(0);
      } finally {
        await admin.end();
      }
    });
  });
});

describe('createStateStore (TA_STATE_STORE=postgres)', () => {
  /** The state part of the config, from environment variables as the server reads them. */
  const stateConfig = (env: Record<string, string>) => loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_STATE_STORE: 'postgres', ...env }).state;

  it('migrates the schema at boot (TA_POSTGRES_MIGRATE=auto) and returns a connected store', async () => {
    const fresh = uniqueSchema('ta_factory');
    const store = await createStateStore(stateConfig({ TA_POSTGRES_URL: testPostgresUrl(), TA_POSTGRES_SCHEMA: fresh }));
    try {
      expect(store).toBeInstanceOf(PostgresStateStore);
      await expect(store.ping()).resolves.toBeUndefined();
      const { rows } = await raw.query(`SELECT max(version) AS v FROM ${fresh}.schema_version`);
      expect(rows[0].v).toBe(SCHEMA_VERSION);
    } finally {
      await store.close();
      await raw.query(`DROP SCHEMA IF EXISTS ${fresh} CASCADE`);
    }
  });

  it('a PostgreSQL it cannot reach refuses the boot, in one line without the password', async () => {
    const err = await createStateStore(stateConfig({ TA_POSTGRES_URL: 'postgres://teal:hunter2@127.0.0.1:9/agents' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendBootError);
    expect((err as Error).message).toBe('PostgreSQL is unreachable at 127.0.0.1:9/agents (ECONNREFUSED)');
  });
});
