/**
 * Erasure and retention of the audit archive (issue 23, items 5 and 7; docs/archive.md): a real
 * server with TA_ARCHIVE_URL on the run's PostgreSQL. `DELETE /admin/principals/{oid}` by a
 * non-admin (403, nothing changed) and by an admin (the person's live tasks of two agents in two
 * sessions gone, their archive rows gone but the one erasure row, another person's and another
 * tenant's untouched), an erasure cut short by tiny bounds and finished by a second call and by the
 * resumer, and the retention purging old rows and keeping recent ones. Only the model vendor is fake.
 */
import { Client } from 'pg';
import { ArchiveEvent } from '../../src/archive/archive-event';
import { ArchiveStore } from '../../src/archive/store/archive.store';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { ArchiveRetentionService } from '../../src/tasks/archive/archive-retention.service';
import { PrincipalErasureService } from '../../src/tasks/archive/principal-erasure.service';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { entraEnv, OidcIssuer, startOidcIssuer } from '../support/oidc-issuer';
import { waitFor } from '../support/faults';
import { postJson, request } from '../support/http';
import { testPostgresUrl, uniqueSchema } from '../support/services';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

const agent = (name: string) => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: Erasure e2e
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
`;
const ADMIN = { 'x-dev-user': 'root', 'x-dev-roles': 'Agents.Admin' };
const DAY = 24 * 60 * 60 * 1000;

describe('erasure and retention of the audit archive', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  let db: Client;
  let store: ArchiveStore;
  const schema = uniqueSchema('archive_erasure_e2e');

  const say = async (user: string, agentName: string, sessionId: string): Promise<string> => {
    llm.script(reply.text(`hello ${user}`));
    const res = await postJson(`${t.url}/${agentName}/1`, { items: [{ content_type: 'text', content: 'hi' }], session_id: sessionId }, { 'x-dev-user': user });
    expect(res.body.status).toBe('Completed');
    return res.body.task_id as string;
  };
  const get = (path: string, headers: Record<string, string> = {}) => request(`${t.url}${path}`, { headers });
  const erase = (oid: string, headers: Record<string, string>) =>
    request(`${t.url}/admin/principals/${encodeURIComponent(oid)}`, { method: 'DELETE', headers });
  const rows = async (owner: string, tenant = DEV_TENANT_ID) =>
    (
      await db.query<{ type: string; payload: Record<string, unknown> }>(`SELECT type, payload FROM ${schema}.events WHERE tenant_id = $1 AND owner_id = $2`, [
        tenant,
        owner,
      ])
    ).rows;
  const taskRows = async (owner: string, tenant = DEV_TENANT_ID) =>
    Number((await db.query(`SELECT count(*) FROM ${schema}.tasks WHERE tenant_id = $1 AND owner_id = $2`, [tenant, owner])).rows[0].count);
  const event = (tenantId: string, ownerId: string, n: number, at: Date): ArchiveEvent => ({
    eventId: `${tenantId}/${ownerId}/${n}/${at.getTime()}`,
    tenantId,
    ownerId,
    sessionId: 's',
    taskId: `t-${n}`,
    requestId: `r-${n}`,
    agentName: 'Direct',
    agentVersion: '1',
    type: 'request_accepted',
    at: at.toISOString(),
    seq: 1,
    ord: 0,
    payload: { text: 'kept in another tenant' },
  });

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({ 'planner.yaml': agent('Planner'), 'helper.yaml': agent('Helper') });
    const env = { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_ARCHIVE_URL: testPostgresUrl(), TA_ARCHIVE_SCHEMA: schema };
    t = await startTestApp({ configPath: dir, env });
    db = new Client({ connectionString: testPostgresUrl() });
    await db.connect();
    store = new ArchiveStore({ url: testPostgresUrl(), schema });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
    await db?.end();
    await store?.close();
  });

  it('erases a person from the caller tenant only: live tasks of every agent and session, archive rows, one erasure row', async () => {
    const alice = [await say('alice', 'Planner', 's1'), await say('alice', 'Planner', 's2'), await say('alice', 'Helper', 's1')];
    const bob = await say('bob', 'Planner', 's1');
    // Alice in another tenant (written straight to the archive: dev mode has one tenant).
    await store.insertEvents([event('tenant-other', 'alice', 1, new Date())]);
    await waitFor(async () => expect(await rows('alice')).toHaveLength(9));
    await waitFor(async () => expect(await rows('bob')).toHaveLength(3));

    // Not an admin (no role, or another role): 403 problem+json, nothing changed.
    const refusals: Record<string, string>[] = [{ 'x-dev-user': 'mallory' }, { 'x-dev-user': 'mallory', 'x-dev-roles': 'Agents.Audit' }];
    for (const headers of refusals) {
      const refused = await erase('alice', headers);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(refused.body.code).toBe('FORBIDDEN');
    }
    expect((await get(`/Planner/1/tasks/${alice[0]}`, { 'x-dev-user': 'alice' })).status).toBe(200);
    expect(await rows('alice')).toHaveLength(9);

    // A bad oid: 422 naming it.
    const tooLong = await erase('x'.repeat(129), ADMIN);
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.errors).toEqual([expect.objectContaining({ field: 'oid' })]);

    const done = await erase('alice', ADMIN);
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ oid: 'alice', status: 'completed', tasks_deleted: 3, events_deleted: 9, audit_event_id: expect.any(String) });
    expect((await get(`/Planner/1/tasks/${alice[0]}`, { 'x-dev-user': 'alice' })).status).toBe(404);
    expect((await get(`/Planner/1/tasks/${alice[1]}`, { 'x-dev-user': 'alice' })).status).toBe(404);
    expect((await get(`/Helper/1/tasks/${alice[2]}`, { 'x-dev-user': 'alice' })).status).toBe(404);
    expect((await get('/Planner/1/sessions', { 'x-dev-user': 'alice' })).body.sessions ?? []).toEqual([]);

    // One row left of her: the erasure, counts only.
    const left = await rows('alice');
    expect(left).toEqual([{ type: 'principal_erased', payload: { eventsDeleted: 9, tasksDeleted: 3, startedAt: expect.any(String) } }]);
    expect(await taskRows('alice')).toBe(0);
    // Bob's task and rows, and alice's rows in the other tenant, untouched.
    expect((await get(`/Planner/1/tasks/${bob}`, { 'x-dev-user': 'bob' })).status).toBe(200);
    expect(await rows('bob')).toHaveLength(3);
    expect(await rows('alice', 'tenant-other')).toHaveLength(1);

    // Again: nothing left, no second erasure row.
    expect((await erase('alice', ADMIN)).body).toEqual({ oid: 'alice', status: 'completed', tasks_deleted: 0, events_deleted: 0 });
    expect(await rows('alice')).toHaveLength(1);
    // An auditor finds the erasure by the person.
    const audited = await get('/audit/events?oid=alice', { 'x-dev-user': 'root', 'x-dev-roles': 'Agents.Audit' });
    expect(audited.body.events.map((e: { type: string }) => e.type)).toEqual(['principal_erased']);
  });

  it('an erasure cut short by its bounds answers in_progress, and a second call (or the resumer) finishes it with the right counts', async () => {
    const erasure = t.app.get(PrincipalErasureService);
    for (const s of ['c1', 'c2', 'c3']) await say('carol', 'Planner', s);
    await waitFor(async () => expect(await rows('carol')).toHaveLength(9));

    // One live task a call: the first call stops after one, and opens the erasure in the archive (2 rows).
    const tiny = { tasks: 1, archiveBatch: 2, archiveSteps: 1 };
    const first = await erasure.erase(DEV_TENANT_ID, 'carol', tiny);
    expect(first).toMatchObject({ status: 'in_progress', tasksDeleted: 1, eventsDeleted: 2 });
    expect(await store.pendingErasures()).toEqual([expect.objectContaining({ tenantId: DEV_TENANT_ID, oid: 'carol' })]);
    const second = await erasure.erase(DEV_TENANT_ID, 'carol', { ...tiny, tasks: 10 });
    expect(second).toMatchObject({ status: 'in_progress', tasksDeleted: 2 });
    // The resumer finishes what is pending (the grace waived).
    const [resumed] = await erasure.resumePending(0);
    expect(resumed).toMatchObject({ oid: 'carol', status: 'completed', tasksDeleted: 0, auditEventId: expect.any(String) });
    expect(first.eventsDeleted + second.eventsDeleted + resumed!.eventsDeleted).toBe(9);
    const left = await rows('carol');
    expect(left).toEqual([{ type: 'principal_erased', payload: expect.objectContaining({ eventsDeleted: 9 }) }]);
    expect(await taskRows('carol')).toBe(0);
    expect(await store.pendingErasures()).toEqual([]);
    expect((await get('/Planner/1/sessions', { 'x-dev-user': 'carol' })).body.sessions ?? []).toEqual([]);
  });

  it('cancels a request of the person still running, then erases its task', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    llm.script(reply.text('too late', { until: held }));
    const before = llm.requests.length;
    const running = postJson(`${t.url}/Helper/1`, { items: [{ content_type: 'text', content: 'slow' }], task_id: 'frank-task' }, { 'x-dev-user': 'frank' });
    await llm.waitForRequest(before);
    const done = await erase('frank', ADMIN);
    expect(done.body).toMatchObject({ status: 'completed', tasks_deleted: 1 });
    const answered = await running;
    expect(answered.body).toMatchObject({ task_id: 'frank-task', status: 'Canceled' });
    release();
    expect((await get('/Helper/1/tasks/frank-task', { 'x-dev-user': 'frank' })).status).toBe(404);
    // Whatever the canceled turn left to archive is erased with the rest: only the erasure row is left.
    await new Promise((r) => setTimeout(r, 100));
    expect((await rows('frank')).map((r) => r.type)).toEqual(['principal_erased']);
  });

  it('retention purges rows older than TA_ARCHIVE_RETENTION_DAYS in bounded batches and keeps recent ones', async () => {
    const retention = t.app.get(ArchiveRetentionService);
    const now = Date.now();
    const old = [1, 2, 3].map((n) => event('tenant-retention', 'dora', n, new Date(now - 400 * DAY - n * 1000)));
    const recent = [4, 5].map((n) => event('tenant-retention', 'dora', n, new Date(now - 300 * DAY - n * 1000)));
    expect(await store.insertEvents([...old, ...recent])).toBe(5);
    // Bounded: one step of two rows, more left.
    expect(await retention.purge(now, 2, 1)).toEqual({ removed: 2, more: true });
    expect(await retention.purge(now)).toEqual({ removed: 1, more: false });
    expect(await rows('dora', 'tenant-retention')).toHaveLength(2);
    expect(await retention.purge(now)).toEqual({ removed: 0, more: false });
  });

  it('the erasure route exists without an archive and erases the live store only', async () => {
    const dir = writeAgentDir({ 'planner.yaml': agent('Planner') });
    const plain = await startTestApp({
      configPath: dir,
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' },
    });
    try {
      llm.script(reply.text('hi erin'));
      const made = await postJson(`${plain.url}/Planner/1`, { items: [{ content_type: 'text', content: 'hi' }] }, { 'x-dev-user': 'erin' });
      expect(made.body.status).toBe('Completed');
      expect((await request(`${plain.url}/admin/principals/erin`, { method: 'DELETE', headers: { 'x-dev-user': 'erin' } })).status).toBe(403);
      const done = await request(`${plain.url}/admin/principals/erin`, { method: 'DELETE', headers: ADMIN });
      expect(done.status).toBe(200);
      expect(done.body).toEqual({ oid: 'erin', status: 'completed', tasks_deleted: 1, events_deleted: 0 });
      expect((await request(`${plain.url}/Planner/1/tasks/${made.body.task_id}`, { headers: { 'x-dev-user': 'erin' } })).status).toBe(404);
      expect((await request(`${plain.url}/audit/events`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});

describe('erasure with Entra ID tokens: the caller tenant only', () => {
  const T1 = 'c0ffee00-0000-4000-8000-0000000000e1';
  const T2 = 'c0ffee00-0000-4000-8000-0000000000e2';
  const ALICE = 'a11ce000-0000-4000-8000-000000000001';
  const ADMIN_OID = 'ad000000-0000-4000-8000-000000000001';
  let llm: FakeOpenAi;
  let issuer: OidcIssuer;
  let t: TestApp;
  let db: Client;
  const schema = uniqueSchema('archive_erasure_entra');

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    issuer = await startOidcIssuer();
    const env = entraEnv(issuer, {
      TA_ENTRA_ALLOWED_TENANTS: `${T1},${T2}`,
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_ARCHIVE_URL: testPostgresUrl(),
      TA_ARCHIVE_SCHEMA: schema,
    });
    t = await startTestApp({ agents: { 'planner.yaml': agent('Planner') }, env });
    db = new Client({ connectionString: testPostgresUrl() });
    await db.connect();
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
    await llm?.close();
    await db?.end();
  });

  const as = async (tid: string, oid: string, roles?: string[]) => ({
    authorization: `Bearer ${await issuer.mint({ tid, oid, ...(roles ? { claims: { roles } } : {}) })}`,
  });
  const rowsOf = async (tid: string) =>
    (await db.query<{ type: string }>(`SELECT type FROM ${schema}.events WHERE tenant_id = $1 AND owner_id = $2 ORDER BY type`, [tid, ALICE])).rows.map(
      (r) => r.type,
    );

  it("another tenant's auditor reads nothing of a task: its timeline and plans 404, /audit/events empty, also once the task is deleted", async () => {
    const CAROL = 'ca401000-0000-4000-8000-000000000003'; // a person of her own: the erasure test below counts alice's rows
    llm.script(reply.text('hi'));
    const res = await postJson(`${t.url}/Planner/1`, { items: [{ content_type: 'text', content: 'hi' }] }, await as(T2, CAROL));
    const taskId = res.body.task_id as string;
    const auditorOf = (tid: string) => as(tid, ADMIN_OID, ['Agents.Audit']);
    await waitFor(async () => expect((await request(`${t.url}/audit/events?task_id=${taskId}`, { headers: await auditorOf(T2) })).body.events).toHaveLength(3));
    for (const deleted of [false, true]) {
      if (deleted) expect((await request(`${t.url}/Planner/1/tasks/${taskId}`, { method: 'DELETE', headers: await as(T2, CAROL) })).status).toBe(204);
      expect((await request(`${t.url}/Planner/1/tasks/${taskId}/events`, { headers: await auditorOf(T1) })).status).toBe(404);
      expect((await request(`${t.url}/Planner/1/tasks/${taskId}/plans`, { headers: await auditorOf(T1) })).status).toBe(404);
      expect((await request(`${t.url}/audit/events?task_id=${taskId}`, { headers: await auditorOf(T1) })).body.events).toEqual([]);
      expect((await request(`${t.url}/audit/events?oid=${CAROL}`, { headers: await auditorOf(T1) })).body.events).toEqual([]);
      // Its own tenant's auditor reads it (after the deletion too).
      expect((await request(`${t.url}/Planner/1/tasks/${taskId}/events`, { headers: await auditorOf(T2) })).status).toBe(200);
    }
  });

  it("an admin of one tenant erases the person there and leaves the same oid's data in another tenant", async () => {
    const tasks: Record<string, string> = {};
    for (const tid of [T1, T2]) {
      llm.script(reply.text('hi'));
      const res = await postJson(`${t.url}/Planner/1`, { items: [{ content_type: 'text', content: 'hi' }] }, await as(tid, ALICE));
      expect(res.body.status).toBe('Completed');
      tasks[tid] = res.body.task_id;
    }
    await waitFor(async () => expect([(await rowsOf(T1)).length, (await rowsOf(T2)).length]).toEqual([3, 3]));

    // A user's token without the app role: 403.
    expect((await request(`${t.url}/admin/principals/${ALICE}`, { method: 'DELETE', headers: await as(T1, ADMIN_OID) })).status).toBe(403);
    const done = await request(`${t.url}/admin/principals/${ALICE}`, { method: 'DELETE', headers: await as(T1, ADMIN_OID, ['Agents.Admin']) });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ oid: ALICE, status: 'completed', tasks_deleted: 1, events_deleted: 3 });

    expect((await request(`${t.url}/Planner/1/tasks/${tasks[T1]}`, { headers: await as(T1, ALICE) })).status).toBe(404);
    expect((await request(`${t.url}/Planner/1/tasks/${tasks[T2]}`, { headers: await as(T2, ALICE) })).status).toBe(200);
    expect(await rowsOf(T1)).toEqual(['principal_erased']);
    expect(await rowsOf(T2)).toHaveLength(3);
  });
});
