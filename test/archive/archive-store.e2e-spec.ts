import { Client } from 'pg';
import { ArchiveEvent, ArchiveEventType } from '../../src/archive/archive-event';
import { ArchiveStore } from '../../src/archive/store/archive.store';
import { ArchiveCursorError, ArchiveUnavailableError } from '../../src/archive/store/archive-errors';
import { ARCHIVE_SCHEMA_VERSION } from '../../src/archive/store/archive-migrations.sql';
import { ArchiveFilter } from '../../src/archive/store/archive-query';
import { ArchivedEvent } from '../../src/archive/store/archive-rows';
import { encodeTimelineCursor, timelineKey } from '../../src/archive/timeline';
import { DomainError } from '../../src/common/errors/domain-error';
import { postgresBootError } from '../../src/state/backends/postgres/postgres-errors';
import { ErrorCode } from '../../src/common/errors/error-code';
import { BackendBootError } from '../../src/state/backend-boot-error';
import { freePort, testPostgresUrl, uniqueSchema } from '../support/services';

/**
 * The archive's PostgreSQL side (src/archive/store/) against the run's real PostgreSQL, each block
 * in a schema of its own: migrations, exactly-once inserts, the orders and keyset pages of the
 * reads, tenant isolation, deletion marks, retention and erasure in bounded batches, and the
 * unavailable database.
 */

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const iso = (offsetS: number) => new Date(T0 + offsetS * 1000).toISOString();

interface Spec {
  tenant?: string;
  owner?: string;
  session?: string;
  task: string;
  seq: number;
  ord: number;
  type?: ArchiveEventType;
  /** Seconds after T0. */
  at: number;
  payload?: Record<string, unknown>;
}

function event(s: Spec): ArchiveEvent {
  const tenant = s.tenant ?? 'tenant-a';
  const type = s.type ?? 'tool_call_completed';
  return {
    eventId: `${tenant}/${s.task}/${s.seq}/${type}/${s.ord}`,
    tenantId: tenant,
    ownerId: s.owner ?? 'alice',
    sessionId: s.session ?? 'sess-1',
    taskId: s.task,
    requestId: `req-${s.task}-${s.seq}`,
    agentName: 'helper',
    agentVersion: '0.1',
    type,
    at: iso(s.at),
    seq: s.seq,
    ord: s.ord,
    payload: s.payload ?? { n: s.ord },
  };
}

/** Every store a test opened, closed at the end of the file. */
const opened: ArchiveStore[] = [];
afterAll(() => Promise.all(opened.map((s) => s.close())));

/** A store on a freshly migrated schema of its own; `more()` opens one more client (a second replica) on it. */
async function archive(base: string): Promise<{ store: ArchiveStore; more: () => ArchiveStore; schema: string }> {
  const schema = uniqueSchema(base);
  const more = () => {
    const s = new ArchiveStore({ url: testPostgresUrl(), schema });
    opened.push(s);
    return s;
  };
  const store = more();
  await store.migrate();
  return { store, more, schema };
}

async function allPages(read: (cursor?: string) => Promise<{ items: ArchivedEvent[]; nextCursor?: string }>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await read(cursor);
    pages++;
    ids.push(...page.items.map((e) => e.eventId));
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages < 1000);
  return { ids, pages };
}

/** The tenant listing's order: time, then (within a millisecond) request and causal place, then id. */
const byTime = (a: ArchiveEvent, b: ArchiveEvent) =>
  Date.parse(a.at) - Date.parse(b.at) || a.seq - b.seq || a.ord - b.ord || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

describe('ArchiveStore: migrations', () => {
  const schema = uniqueSchema('archive_migrate');
  const open = () => {
    const s = new ArchiveStore({ url: testPostgresUrl(), schema });
    opened.push(s);
    return s;
  };

  it('N clients migrating together apply each migration once; a later migrate changes nothing', async () => {
    const outcomes = await Promise.all([open(), open(), open(), open()].map((s) => s.migrate()));
    expect(outcomes.every((o) => o.schema === schema && o.to === ARCHIVE_SCHEMA_VERSION)).toBe(true);
    expect(outcomes.filter((o) => o.from === 0)).toHaveLength(1);
    expect(await open().migrate()).toEqual({ schema, from: ARCHIVE_SCHEMA_VERSION, to: ARCHIVE_SCHEMA_VERSION });
    expect(await open().migrate('off')).toEqual({ schema, from: ARCHIVE_SCHEMA_VERSION, to: ARCHIVE_SCHEMA_VERSION });
    const client = new Client({ connectionString: testPostgresUrl() });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${schema}.schema_version ORDER BY version`);
      expect(rows.map((r) => r.version)).toEqual([ARCHIVE_SCHEMA_VERSION]);
      const tables = await client.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename', [schema]);
      expect(tables.rows.map((r) => r.tablename)).toEqual(['erasures', 'events', 'schema_version', 'tasks']);
    } finally {
      await client.end();
    }
  });

  it('refuses a schema newer than this release, and with off a schema behind it, in one line (BackendBootError)', async () => {
    const client = new Client({ connectionString: testPostgresUrl() });
    await client.connect();
    try {
      await client.query(`INSERT INTO ${schema}.schema_version (version, name) VALUES (99, 'from the future')`);
      const newer = await open()
        .migrate()
        .catch((e: unknown) => e);
      expect(newer).toBeInstanceOf(BackendBootError);
      expect((newer as Error).message).toBe(
        `Archive schema ${schema} is at version 99, newer than this teal-agent-server knows (${ARCHIVE_SCHEMA_VERSION}): run a release that knows it`,
      );
    } finally {
      await client.query(`DELETE FROM ${schema}.schema_version WHERE version = 99`);
      await client.end();
    }
    const empty = uniqueSchema('archive_off');
    const off = await new ArchiveStore({ url: testPostgresUrl(), schema: empty }).migrate('off').catch((e: unknown) => e);
    expect((off as Error).message).toBe(
      `Archive schema ${empty} is at version 0, this teal-agent-server needs ${ARCHIVE_SCHEMA_VERSION}: let a replica migrate it (auto)`,
    );
  });

  it('refuses a schema name that would need quoting', () => {
    expect(() => new ArchiveStore({ url: testPostgresUrl(), schema: 'Bad-Name' })).toThrow(TypeError);
  });
});

describe('ArchiveStore: exactly once', () => {
  let ctx: Awaited<ReturnType<typeof archive>>;
  beforeAll(async () => {
    ctx = await archive('archive_once');
  });

  it('the same events inserted twice are stored once; a batch holding an event twice stores it once', async () => {
    const events = [0, 1, 2, 3, 4].map((ord) => event({ task: 'once-1', seq: 1, ord, at: ord }));
    expect(await ctx.store.insertEvents(events)).toBe(5);
    expect(await ctx.store.insertEvents(events)).toBe(0);
    expect(await ctx.store.insertEvents([...events, event({ task: 'once-1', seq: 2, ord: 0, at: 9 }), event({ task: 'once-1', seq: 2, ord: 0, at: 9 })])).toBe(
      1,
    );
    const page = await ctx.store.taskTimeline('tenant-a', 'once-1', { limit: 100 });
    expect(page.items.map((e) => e.eventId)).toEqual([...events.map((e) => e.eventId), 'tenant-a/once-1/2/tool_call_completed/0']);
    expect(page.items[0]).toEqual({ ...events[0], archivedAt: undefined });
    expect(page.items[0]).not.toHaveProperty('archivedAt');
  });

  it('two clients inserting overlapping batches concurrently (in opposite orders) store each event once', async () => {
    const all = Array.from({ length: 60 }, (_, i) => event({ task: `race-${i % 3}`, seq: Math.floor(i / 3), ord: 0, at: i }));
    const [a, b] = [ctx.more(), ctx.more()];
    const rounds = await Promise.all(
      Array.from({ length: 6 }, (_, r) => {
        const slice = all.slice(r * 8, r * 8 + 20);
        return Promise.all([a.insertEvents(slice), b.insertEvents([...slice].reverse())]);
      }),
    );
    const inserted = rounds.flat().reduce((sum, n) => sum + n, 0);
    const stored = all.slice(0, 60).filter((_, i) => i < 5 * 8 + 20);
    expect(inserted).toBe(stored.length);
    const ids = (await allPages((cursor) => ctx.store.listEvents({ tenantId: 'tenant-a', sessionId: 'sess-1' }, { limit: 100, cursor }))).ids;
    const raced = ids.filter((id) => id.includes('/race-'));
    expect(raced).toHaveLength(stored.length);
    expect(new Set(raced)).toEqual(new Set(stored.map((e) => e.eventId)));
  });

  it('notes a task with its events in one call; the archived version only rises', async () => {
    const note = { tenantId: 'tenant-a', taskId: 'noted', ownerId: 'alice', sessionId: 'sess-1', agent: 'helper:0.1', version: 3 };
    expect(await ctx.store.insertEvents([event({ task: 'noted', seq: 1, ord: 0, at: 1 })], [note, { ...note, version: 2 }])).toBe(1);
    expect(await ctx.store.taskInfo('tenant-a', 'noted')).toEqual({
      tenantId: 'tenant-a',
      taskId: 'noted',
      ownerId: 'alice',
      sessionId: 'sess-1',
      agent: 'helper:0.1',
      archivedVersion: 3,
    });
    await ctx.store.noteTask('tenant-a', 'noted', { ownerId: 'alice', sessionId: 'sess-1', agent: 'helper:0.1', version: 2 });
    expect((await ctx.store.taskInfo('tenant-a', 'noted'))?.archivedVersion).toBe(3);
    await Promise.all([5, 4, 7, 6].map((version) => ctx.more().noteTask('tenant-a', 'noted', { ...note, version })));
    expect((await ctx.store.taskInfo('tenant-a', 'noted'))?.archivedVersion).toBe(7);
    expect(await ctx.store.taskInfo('tenant-a', 'never')).toBeUndefined();
    expect(await ctx.store.insertEvents([], [])).toBe(0);
  });

  it('keeps payloads PostgreSQL jsonb would refuse (U+0000, a lone surrogate) as U+FFFD, and refuses a malformed event before sending it', async () => {
    const odd = event({ task: 'odd', seq: 1, ord: 0, at: 1, payload: { result: 'a\u0000b', ['k\u0000']: '\ud800x', nested: [{ s: 'ok' }] } });
    expect(await ctx.store.insertEvents([odd])).toBe(1);
    const [stored] = (await ctx.store.taskTimeline('tenant-a', 'odd', { limit: 10 })).items;
    expect(stored?.payload).toEqual({ result: 'a\uFFFDb', ['k\uFFFD']: '\uFFFDx', nested: [{ s: 'ok' }] });
    await expect(ctx.store.insertEvents([{ ...odd, eventId: 'bad-time', at: 'yesterday' }])).rejects.toThrow(TypeError);
    await expect(ctx.store.insertEvents([{ ...odd, eventId: 'bad-seq', seq: 1.5 }])).rejects.toThrow(TypeError);
  });
});

describe('ArchiveStore: reads', () => {
  let ctx: Awaited<ReturnType<typeof archive>>;
  const events: ArchiveEvent[] = [];
  beforeAll(async () => {
    ctx = await archive('archive_reads');
    const types: ArchiveEventType[] = ['request_accepted', 'model_call', 'tool_call_started', 'tool_call_completed', 'request_completed'];
    let at = 0;
    for (const [task, owner, session] of [
      ['t-1', 'alice', 'sess-1'],
      ['t-2', 'alice', 'sess-2'],
      ['t-3', 'bob', 'sess-1'],
    ] as const) {
      for (let seq = 1; seq <= 2; seq++) {
        types.forEach((type, ord) => events.push(event({ task, owner, session, seq, ord, type, at: at++ % 17 })));
      }
    }
    // Ties on time: the id orders them.
    events.push(event({ task: 't-1', seq: 3, ord: 0, type: 'edit', at: 5 }), event({ task: 't-1', seq: 3, ord: 1, type: 'fork', at: 5 }));
    // Another tenant with the same task ids, owners and sessions.
    const other = events.map((e) => ({ ...e, tenantId: 'tenant-b', eventId: e.eventId.replace('tenant-a/', 'tenant-b/') }));
    for (const part of [shuffled(events), shuffled(other)]) expect(await ctx.store.insertEvents(part)).toBe(part.length);
  });

  it("a task's timeline is ordered by (seq, ord, event_id), not by time, paged by the timeline's cursor or key", async () => {
    const expected = events.filter((e) => e.taskId === 't-1').sort((a, b) => a.seq - b.seq || a.ord - b.ord || (a.eventId < b.eventId ? -1 : 1));
    const whole = await ctx.store.taskTimeline('tenant-a', 't-1', { limit: 100 });
    expect(whole.items.map((e) => e.eventId)).toEqual(expected.map((e) => e.eventId));
    expect(whole.nextCursor).toBeUndefined();
    const paged = await allPages((cursor) => ctx.store.taskTimeline('tenant-a', 't-1', { limit: 3, cursor }));
    expect(paged).toEqual({ ids: expected.map((e) => e.eventId), pages: Math.ceil(expected.length / 3) });
    const after = await ctx.store.taskTimeline('tenant-a', 't-1', { limit: 2, after: timelineKey(expected[4]!) });
    expect(after.items.map((e) => e.eventId)).toEqual(expected.slice(5, 7).map((e) => e.eventId));
    expect(after.nextCursor).toBe(encodeTimelineCursor(timelineKey(expected[6]!)));
  });

  it('listEvents orders by (at, seq, ord, event_id) and pages through every filter, each row once', async () => {
    const filters: Omit<ArchiveFilter, 'tenantId'>[] = [
      {},
      { ownerId: 'alice' },
      { ownerId: 'bob' },
      { taskId: 't-2' },
      { sessionId: 'sess-1' },
      { type: 'model_call' },
      { ownerId: 'alice', sessionId: 'sess-1', type: 'request_accepted' },
      { since: new Date(T0 + 5000) },
      { until: new Date(T0 + 5000) },
      { since: new Date(T0 + 3000), until: new Date(T0 + 9000), ownerId: 'alice' },
      { ownerId: 'nobody' },
    ];
    for (const f of filters) {
      const expected = events
        .filter(
          (e) =>
            (f.ownerId === undefined || e.ownerId === f.ownerId) &&
            (f.taskId === undefined || e.taskId === f.taskId) &&
            (f.sessionId === undefined || e.sessionId === f.sessionId) &&
            (f.type === undefined || e.type === f.type) &&
            (f.since === undefined || Date.parse(e.at) >= f.since.getTime()) &&
            (f.until === undefined || Date.parse(e.at) < f.until.getTime()),
        )
        .sort(byTime)
        .map((e) => e.eventId);
      for (const limit of [1, 4, 1000]) {
        const { ids, pages } = await allPages((cursor) => ctx.store.listEvents({ tenantId: 'tenant-a', ...f }, { limit, cursor }));
        expect({ f, limit, ids }).toEqual({ f, limit, ids: expected });
        expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
      }
    }
  });

  it("never shows another tenant's rows, whatever the filter", async () => {
    for (const f of [{}, { ownerId: 'alice' }, { taskId: 't-1' }, { sessionId: 'sess-1' }, { type: 'edit' }]) {
      const { ids } = await allPages((cursor) => ctx.store.listEvents({ tenantId: 'tenant-b', ...f }, { limit: 7, cursor }));
      expect(ids.length).toBeGreaterThan(0);
      expect(ids.every((id) => id.startsWith('tenant-b/'))).toBe(true);
    }
    const timeline = await ctx.store.taskTimeline('tenant-b', 't-1', { limit: 100 });
    expect(timeline.items.every((e) => e.tenantId === 'tenant-b')).toBe(true);
    expect((await ctx.store.listEvents({ tenantId: 'tenant-c' }, { limit: 10 })).items).toEqual([]);
    expect((await ctx.store.taskTimeline('tenant-c', 't-1', { limit: 10 })).items).toEqual([]);
    // A cursor of tenant-a's pages read under tenant-b still reads only tenant-b.
    const { nextCursor } = await ctx.store.listEvents({ tenantId: 'tenant-a' }, { limit: 3 });
    const next = await ctx.store.listEvents({ tenantId: 'tenant-b' }, { limit: 50, cursor: nextCursor });
    expect(next.items.every((e) => e.tenantId === 'tenant-b')).toBe(true);
  });

  it('refuses a cursor it did not issue (ArchiveCursorError, INVALID_CURSOR), and a bad page limit', async () => {
    const { nextCursor } = await ctx.store.listEvents({ tenantId: 'tenant-a' }, { limit: 2 });
    const timelineCursor = (await ctx.store.taskTimeline('tenant-a', 't-1', { limit: 2 })).nextCursor!;
    const forged = Buffer.from('e/not-a-time/x').toString('base64url');
    for (const cursor of ['!!', 'abc', '', timelineCursor, forged, `${nextCursor}%`, 'x'.repeat(5000)]) {
      const err = await ctx.store.listEvents({ tenantId: 'tenant-a' }, { limit: 2, cursor }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ArchiveCursorError);
      expect((err as DomainError).code).toBe(ErrorCode.INVALID_CURSOR);
    }
    for (const cursor of ['!!', nextCursor!]) {
      const err = await ctx.store.taskTimeline('tenant-a', 't-1', { limit: 2, cursor }).catch((e: unknown) => e);
      expect((err as DomainError).code).toBe(ErrorCode.INVALID_CURSOR);
    }
    await expect(ctx.store.listEvents({ tenantId: 'tenant-a' }, { limit: 0 })).rejects.toThrow(RangeError);
    expect((await ctx.store.listEvents({ tenantId: 'tenant-a' }, { limit: 10_000 })).items).toHaveLength(events.length);
  });

  it('exportEvents yields every event of the filter in order, one page at a time', async () => {
    const seen: string[] = [];
    for await (const e of ctx.store.exportEvents({ tenantId: 'tenant-a', ownerId: 'alice' }, 4)) seen.push(e.eventId);
    expect(seen).toEqual(
      events
        .filter((e) => e.ownerId === 'alice')
        .sort(byTime)
        .map((e) => e.eventId),
    );
  });
});

describe('ArchiveStore: deletion and retention', () => {
  let ctx: Awaited<ReturnType<typeof archive>>;
  beforeAll(async () => {
    ctx = await archive('archive_retention');
  });

  it('markDeleted keeps the rows, marks them and the task; a later call keeps the first time; a late event is marked too', async () => {
    const events = [0, 1, 2].map((ord) => event({ task: 'gone', seq: 1, ord, at: ord }));
    const note = { tenantId: 'tenant-a', taskId: 'gone', ownerId: 'alice', sessionId: 'sess-1', agent: 'helper:0.1', version: 2 };
    await ctx.store.insertEvents(events, [note]);
    const at = new Date(T0 + 60_000);
    expect(await ctx.store.markDeleted('tenant-a', 'gone', at)).toBe(3);
    expect(await ctx.store.markDeleted('tenant-a', 'gone', new Date(T0 + 120_000))).toBe(0);
    expect((await ctx.store.taskInfo('tenant-a', 'gone'))?.deletedAt).toBe(at.toISOString());
    await ctx.store.insertEvents([event({ task: 'gone', seq: 2, ord: 0, type: 'task_deleted', at: 59 })]);
    const { items } = await ctx.store.taskTimeline('tenant-a', 'gone', { limit: 10 });
    expect(items).toHaveLength(4);
    expect(items.every((e) => e.archivedAt === at.toISOString())).toBe(true);
    // A task the archive has events of but no row: markDeleted gives it one, from its events.
    await ctx.store.insertEvents([event({ task: 'unnoted', seq: 1, ord: 0, at: 1, owner: 'carol' })]);
    expect(await ctx.store.markDeleted('tenant-a', 'unnoted', at)).toBe(1);
    expect(await ctx.store.taskInfo('tenant-a', 'unnoted')).toEqual({
      tenantId: 'tenant-a',
      taskId: 'unnoted',
      ownerId: 'carol',
      sessionId: 'sess-1',
      agent: 'helper:0.1',
      archivedVersion: 0,
      deletedAt: at.toISOString(),
    });
    expect(await ctx.store.markDeleted('tenant-a', 'nothing', at)).toBe(0);
    expect(await ctx.store.taskInfo('tenant-a', 'nothing')).toBeUndefined();
  });

  it('purgeOlderThan removes at most a batch per call, oldest first, then the rows of deleted tasks left without events', async () => {
    const old = Array.from({ length: 7 }, (_, i) => event({ tenant: 'tenant-r', task: 'old', seq: i, ord: 0, at: -3600 + i }));
    const young = [event({ tenant: 'tenant-r', task: 'young', seq: 0, ord: 0, at: 1000 })];
    const note = { tenantId: 'tenant-r', taskId: 'old', ownerId: 'alice', sessionId: 'sess-1', agent: 'helper:0.1', version: 1 };
    await ctx.store.insertEvents([...old, ...young], [note, { ...note, taskId: 'young' }]);
    await ctx.store.markDeleted('tenant-r', 'old', new Date(T0 - 3_000_000));
    const cutoff = new Date(T0 - 30 * 60_000 + 1); // the other blocks' rows (from T0 - 59 s on) are younger
    const counts: number[] = [];
    for (let n = await ctx.store.purgeOlderThan(cutoff, 3); ; n = await ctx.store.purgeOlderThan(cutoff, 3)) {
      counts.push(n);
      if (n === 0) break;
    }
    // 7 events in batches of 3, then the task row once no event of it is left.
    expect(counts).toEqual([3, 3, 1, 1, 0]);
    expect(await ctx.store.taskInfo('tenant-r', 'old')).toBeUndefined();
    expect(await ctx.store.taskInfo('tenant-r', 'young')).toBeDefined();
    expect((await ctx.store.listEvents({ tenantId: 'tenant-r' }, { limit: 10 })).items.map((e) => e.eventId)).toEqual([young[0]!.eventId]);
    expect((await ctx.store.taskTimeline('tenant-a', 'gone', { limit: 10 })).items).toHaveLength(4);
    await expect(ctx.store.purgeOlderThan(cutoff, 0)).rejects.toThrow(RangeError);
  });
});

describe('ArchiveStore: erasure', () => {
  let ctx: Awaited<ReturnType<typeof archive>>;
  const aliceEvents = [
    ...[0, 1, 2, 3].map((ord) => event({ task: 'a-1', seq: 1, ord, at: ord })),
    ...[0, 1, 2].map((ord) => event({ task: 'a-2', seq: 1, ord, at: 10 + ord, session: 'sess-2' })),
  ];
  const bobEvents = [0, 1, 2].map((ord) => event({ task: 'b-1', seq: 1, ord, at: 5 + ord, owner: 'bob', payload: { by: 'alice' } }));
  const elsewhere = [event({ tenant: 'tenant-z', task: 'a-1', seq: 1, ord: 0, at: 0 })];
  const note = (taskId: string, ownerId: string, tenantId = 'tenant-a') => ({
    tenantId,
    taskId,
    ownerId,
    sessionId: 'sess-1',
    agent: 'helper:0.1',
    version: 1,
  });
  beforeAll(async () => {
    ctx = await archive('archive_erasure');
    await ctx.store.insertEvents(
      [...aliceEvents, ...bobEvents, ...elsewhere],
      [note('a-1', 'alice'), note('a-2', 'alice'), note('b-1', 'bob'), note('a-1', 'alice', 'tenant-z')],
    );
  });

  it("erases a person's rows in bounded batches, resumable, leaving one content-free principal_erased row", async () => {
    const eventId = 'tenant-a//0/principal_erased/alice';
    // One step, then "a crash": a new client finds the erasure pending and resumes it.
    expect(await ctx.store.erasePrincipalBatch('tenant-a', 'alice', 3)).toEqual({ done: false, deleted: 5, events: 3, tasks: 2 });
    expect(await ctx.store.recordErasure('tenant-a', 'alice', eventId)).toBeUndefined(); // rows remain
    const resumed = ctx.more();
    const [pending] = await resumed.pendingErasures();
    expect(pending).toMatchObject({ tenantId: 'tenant-a', oid: 'alice', eventsDeleted: 3, tasksDeleted: 2 });
    const steps = [];
    for (;;) {
      const step = await resumed.erasePrincipalBatch(pending!.tenantId, pending!.oid, 3);
      steps.push(step);
      if (step.done) break;
    }
    expect(steps).toEqual([
      { done: false, deleted: 3, events: 3, tasks: 0 },
      { done: true, deleted: 1, events: 1, tasks: 0 },
    ]);
    const recorded = await resumed.recordErasure('tenant-a', 'alice', eventId);
    expect(recorded).toMatchObject({
      eventId,
      tenantId: 'tenant-a',
      ownerId: 'alice',
      sessionId: '',
      taskId: '',
      agentName: '',
      agentVersion: '',
      type: 'principal_erased',
      seq: 0,
      ord: 0,
      payload: { eventsDeleted: 7, tasksDeleted: 2, startedAt: expect.any(String) },
    });
    expect(recorded).not.toHaveProperty('requestId');
    expect(await resumed.pendingErasures()).toEqual([]);
    // Recording again answers the same row; erasing again finds nothing (and keeps the record).
    expect(await ctx.store.recordErasure('tenant-a', 'alice', eventId)).toEqual(recorded);
    const alice = await ctx.store.listEvents({ tenantId: 'tenant-a', ownerId: 'alice' }, { limit: 100 });
    expect(alice.items).toEqual([recorded]);
    expect(await ctx.store.taskInfo('tenant-a', 'a-1')).toBeUndefined();
    // Other owners (also where a payload names the person) and other tenants are untouched.
    const bob = await ctx.store.listEvents({ tenantId: 'tenant-a', ownerId: 'bob' }, { limit: 100 });
    expect(bob.items.map((e) => e.eventId)).toEqual(bobEvents.map((e) => e.eventId));
    expect(await ctx.store.taskInfo('tenant-a', 'b-1')).toBeDefined();
    expect((await ctx.store.listEvents({ tenantId: 'tenant-z' }, { limit: 100 })).items).toHaveLength(1);
    expect(await ctx.store.taskInfo('tenant-z', 'a-1')).toBeDefined();
  });

  it('two replicas erasing the same person at once delete each row once, count each once, and record one row', async () => {
    const many = Array.from({ length: 20 }, (_, i) => event({ tenant: 'tenant-q', task: `q-${i % 4}`, seq: i, ord: 0, at: i, owner: 'dana' }));
    await ctx.store.insertEvents(
      many,
      [0, 1, 2, 3].map((i) => note(`q-${i}`, 'dana', 'tenant-q')),
    );
    const replica = async (store: ArchiveStore) => {
      let deleted = 0;
      for (let step = await store.erasePrincipalBatch('tenant-q', 'dana', 3); ; step = await store.erasePrincipalBatch('tenant-q', 'dana', 3)) {
        deleted += step.deleted;
        if (step.done) break;
      }
      // A replica that finished while the other still deletes finds rows left: it steps again.
      let row = await store.recordErasure('tenant-q', 'dana', 'tenant-q//0/principal_erased/dana');
      while (!row) {
        deleted += (await store.erasePrincipalBatch('tenant-q', 'dana', 3)).deleted;
        row = await store.recordErasure('tenant-q', 'dana', 'tenant-q//0/principal_erased/dana');
      }
      return { deleted, row };
    };
    const [a, b] = await Promise.all([replica(ctx.more()), replica(ctx.more())]);
    expect(a.deleted + b.deleted).toBe(24);
    expect(a.row).toEqual(b.row);
    expect(a.row.payload).toMatchObject({ eventsDeleted: 20, tasksDeleted: 4 });
    const left = await ctx.store.listEvents({ tenantId: 'tenant-q' }, { limit: 100 });
    expect(left.items.map((e) => e.type)).toEqual(['principal_erased']);
  });

  it('a second erasure of the same person starts from zero and keeps the first record', async () => {
    await ctx.store.insertEvents([event({ task: 'a-3', seq: 1, ord: 0, at: 30 })]);
    expect(await ctx.store.erasePrincipalBatch('tenant-a', 'alice', 10)).toEqual({ done: true, deleted: 1, events: 1, tasks: 0 });
    const second = await ctx.store.recordErasure('tenant-a', 'alice', 'tenant-a//0/principal_erased/alice#2');
    expect(second?.payload).toMatchObject({ eventsDeleted: 1, tasksDeleted: 0 });
    const alice = await ctx.store.listEvents({ tenantId: 'tenant-a', ownerId: 'alice' }, { limit: 100 });
    expect(alice.items.map((e) => e.type)).toEqual(['principal_erased', 'principal_erased']);
    // A step finding nothing after a recorded erasure (a replica's late step) does not reopen it.
    expect(await ctx.store.erasePrincipalBatch('tenant-a', 'alice', 10)).toEqual({ done: true, deleted: 0, events: 0, tasks: 0 });
    expect(await ctx.store.pendingErasures()).toEqual([]);
    expect(await ctx.store.recordErasure('tenant-a', 'alice', 'tenant-a//0/principal_erased/alice#2')).toEqual(second);
    expect(await ctx.store.recordErasure('tenant-a', 'nobody', 'x')).toBeUndefined(); // never started
    await expect(ctx.store.erasePrincipalBatch('tenant-a', 'alice', 0)).rejects.toThrow(RangeError);
  });
});

describe('ArchiveStore: an unavailable database', () => {
  it('a closed port fails every call with ArchiveUnavailableError, within the bound', async () => {
    const port = await freePort();
    const store = new ArchiveStore({ url: `postgres://postgres@127.0.0.1:${port}/postgres`, acquireTimeoutMs: 1000 });
    try {
      const started = Date.now();
      for (const call of [
        () => store.ping(),
        () => store.insertEvents([event({ task: 'x', seq: 1, ord: 0, at: 0 })]),
        () => store.listEvents({ tenantId: 'tenant-a' }, { limit: 1 }),
      ]) {
        const err = await call().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ArchiveUnavailableError);
        expect((err as ArchiveUnavailableError).code).toBe(ErrorCode.ARCHIVE_UNAVAILABLE);
        expect((err as ArchiveUnavailableError).unsent).toBe(true);
      }
      // migrate() throws what node-postgres threw, for the boot's one line (archive.factory.ts).
      const err = await store.migrate().catch((e: unknown) => e);
      expect(postgresBootError(err, { url: `postgres://127.0.0.1:${port}/postgres`, schema: store.schema }).message).toBe(
        `PostgreSQL is unreachable at 127.0.0.1:${port}/postgres (ECONNREFUSED)`,
      );
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await store.close();
    }
  });

  it('a schema never migrated, and a closed store, are unavailable too', async () => {
    const store = new ArchiveStore({ url: testPostgresUrl(), schema: uniqueSchema('archive_none') });
    const err = await store.listEvents({ tenantId: 'tenant-a' }, { limit: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArchiveUnavailableError);
    expect((err as Error).message).toMatch(/archive schema is missing or not migrated/i);
    await store.ping();
    await store.close();
    await expect(store.ping()).rejects.toBeInstanceOf(ArchiveUnavailableError);
  });
});
