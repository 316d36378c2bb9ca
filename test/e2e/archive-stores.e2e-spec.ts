/**
 * The audit archive (issue 23) over each shared live store: Redis, DynamoDB Local and PostgreSQL
 * (the state store in a schema of its own, the archive in another of the same database). Two
 * application instances (replicas) share the store and the archive; the conversation's turns
 * alternate between them, so the archive's rows are written by both. The archive's `events` table,
 * read directly, holds exactly the conversation's events in timeline order, each id once, with the
 * ids and payloads the live records derive; the timeline, the plans, and the timeline after a
 * deletion read the same through either replica. (The memory store: archive.e2e-spec.ts.)
 */
import { Client } from 'pg';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import {
  archiveAgentDir,
  archivedRows,
  CONVERSATION_EVENTS,
  CONVERSATION_PLANS,
  CONVERSATION_REQUESTS,
  liveEvents,
  planConversation,
  settled,
  startsBeforeEnds,
  typesByRequest,
} from '../support/archive-conversation';
import { FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, testPostgresUrl, testRedisUrl, uniqueName, uniqueSchema } from '../support/services';
import { startTestApp, TestApp } from '../support/test-app';

interface Backend {
  name: string;
  /** A fresh store on the shared backend, keeping the archive index (as a server with TA_ARCHIVE_URL builds it): one per replica. */
  setup(): Promise<() => StateStore>;
}

const backends: Backend[] = [
  {
    name: 'Redis',
    setup: async () => {
      const keyPrefix = `${uniqueName('archive-stores')}:`;
      return () => new RedisStateStore({ url: testRedisUrl(), keyPrefix, archiveIndex: true });
    },
  },
  {
    name: 'DynamoDB Local',
    setup: async () => {
      const table = uniqueName('archive-stores');
      await createTestStateTable(table);
      return () => new DynamoDbStateStore({ table, endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL, archiveIndex: true });
    },
  },
  {
    name: 'PostgreSQL',
    setup: async () => {
      // The state store's schema, migrated once (as a booting server does); the archive's is another schema of the same database.
      const schema = uniqueSchema('archive_stores_state');
      const store = () => new PostgresStateStore({ url: testPostgresUrl(), schema, archiveIndex: true });
      const first = store();
      await first.prepare().finally(() => first.close());
      return store;
    },
  },
];

type View = { event_id: string; type: string; archived_at: string | null };

describe.each(backends)('the audit archive over $name, written by two replicas', ({ setup }) => {
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  let store: StateStore;
  let db: Client;
  const schema = uniqueSchema('archive_stores');

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const newStore = await setup();
    const dir = archiveAgentDir();
    const env = {
      TA_BASE_URL: llm.baseURL,
      TA_API_KEY: 'sk-test',
      TA_LLM_MAX_RETRIES: '0',
      TA_LOG_LEVEL: 'warn',
      TA_ARCHIVE_URL: testPostgresUrl(),
      TA_ARCHIVE_SCHEMA: schema,
      // The catch-up soon, should a drain lose a race; the drain after each commit is what archives here.
      TA_ARCHIVE_CATCHUP_MS: '500',
      TA_ARCHIVE_GRACE_MS: '300',
      // A lease a busy machine still renews in time (a lapsed one is recovered by the other replica, not what this looks at).
      TA_TASK_LEASE_MS: '5000',
    };
    // Both at once: the archive's schema is migrated once (the other replica waits on its lock).
    [a, b] = await Promise.all([startTestApp({ configPath: dir, env, store: newStore() }), startTestApp({ configPath: dir, env, store: newStore() })]);
    store = newStore();
    db = new Client({ connectionString: testPostgresUrl() });
    await db.connect();
  }, 60_000);
  afterEach(() => llm.discard());
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await store?.close();
    await db?.end();
    await llm?.close();
  });

  it('a plan approved, one rejected, one refined, one expired: each event once, in order, as the live records derive them; plans; the timeline after deletion', async () => {
    const taskId = await planConversation(llm, a.url, b.url);
    const expected = CONVERSATION_EVENTS;

    // The drains after each commit (on both replicas) bring the archive up to date within moments.
    await waitFor(async () => expect(await archivedRows(db, schema, taskId)).toHaveLength(expected.length), 15_000);
    const rows = await archivedRows(db, schema, taskId);
    // In causal order on every store, DynamoDB's estimated clock included (the timeline does not sort by time).
    expect(settled(rows.map((r) => r.type))).toEqual(expected);
    startsBeforeEnds(rows);
    expect(typesByRequest(rows)).toEqual(CONVERSATION_REQUESTS.map((r) => [...r].sort()));
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);
    // Exactly the events the live records derive, under the same ids and with the same payloads.
    const live = await liveEvents(store, taskId);
    expect(rows.map((r) => r.event_id).sort()).toEqual(live.map((e) => e.eventId).sort());
    const payloads = (list: { event_id?: string; eventId?: string; payload: unknown }[]) =>
      Object.fromEntries(list.map((e) => [e.event_id ?? e.eventId, JSON.parse(JSON.stringify(e.payload)) as unknown]));
    expect(payloads(rows)).toEqual(payloads(live));
    expect(rows.every((r) => r.archived_at === null)).toBe(true);

    // Either replica reads the same timeline and plans.
    for (const t of [a, b]) {
      const timeline = await request(`${t.url}/Planner/1/tasks/${taskId}/events`);
      expect(timeline.status).toBe(200);
      expect((timeline.body.events as View[]).map((e) => e.event_id)).toEqual(rows.map((r) => r.event_id));
      const plans = await request(`${t.url}/Planner/1/tasks/${taskId}/plans`);
      expect(plans.body.plans.map((p: { status: string }) => p.status)).toEqual(CONVERSATION_PLANS);
    }

    // Deleted through one replica: the other reads the whole timeline, task_deleted last, every row kept and marked archived.
    expect((await request(`${a.url}/Planner/1/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(204);
    expect((await request(`${b.url}/Planner/1/tasks/${taskId}`)).status).toBe(404);
    const after = await request(`${b.url}/Planner/1/tasks/${taskId}/events`);
    expect(after.status).toBe(200);
    const kept = after.body.events as View[];
    expect(kept.map((e) => e.event_id)).toEqual([...rows.map((r) => r.event_id), kept.at(-1)!.event_id]);
    expect(kept.at(-1)!.type).toBe('task_deleted');
    expect(kept.every((e) => e.archived_at !== null)).toBe(true);
    const stored = await archivedRows(db, schema, taskId);
    expect(stored.map((r) => r.event_id)).toEqual(kept.map((e) => e.event_id));
    expect(stored.every((r) => r.archived_at !== null)).toBe(true);
    const plans = await request(`${a.url}/Planner/1/tasks/${taskId}/plans`);
    expect(plans.body.plans.map((p: { status: string }) => p.status)).toEqual(CONVERSATION_PLANS);
  }, 60_000);
});
