/**
 * The audit archive (issue 23) through faults: nothing lost, nothing twice, nothing slowed.
 *
 * - The archive's PostgreSQL (a server of this file's own) stopped for a minute while turns run:
 *   every turn answers as it would, a DELETE is refused (503 ARCHIVE_UNAVAILABLE) with nothing
 *   deleted; once it is back, the catch-up (TA_ARCHIVE_CATCHUP_MS) brings the archive to exactly
 *   the events the live records derive, each once, and the DELETE goes through, task_deleted last.
 *   The server is the built CLI on a Redis of this file's own, its clocks libfaketime's.
 * - A replica killed (kill -9) mid-turn on a shared Redis, after turns whose archive writes never
 *   left it (its connection to the archive held): the survivor's lease sweep closes the request,
 *   and its drain and catch-up leave the archive holding every event of every stored request
 *   exactly once.
 *
 * The minute of downtime is not waited out idle: it passes on the server's clocks. The server runs
 * under libfaketime (test/support/faketime.ts) with both its wall clock (Date) and its monotonic
 * clock (performance.now, and libuv's loop time, which every timer of the process is set on) read
 * from a file. While the archive is down, for real seconds (the turns, the kill -9 case, run on the
 * run's PostgreSQL, not the stopped one), its drains and catch-up passes fail; then the file moves
 * both clocks a minute on: every timer the server set that a minute would have run out fires (its
 * catch-up pass, the pool's 30 s idle timeout, keep-alives), and what it reads from Date is a minute
 * on, exactly as for a process that was not scheduled for that minute. The server judges the outage
 * by nothing else: it keeps no count of failed passes and has no deadline of its own for the
 * archive. The test requires the minute on the server's clock (its HTTP Date header at the stop and
 * at the restart, 60 s apart at least) and a catch-up pass that failed a minute after the stop (the
 * time of its log line), before it starts the archive again.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DEV_TENANT_ID } from '../../src/auth/principal';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { StateStore } from '../../src/state/state-store';
import { archiveAgentDir, archivedRows, CONVERSATION_EVENTS, liveEvents, planConversation, say, settled, toolCall } from '../support/archive-conversation';
import { CliRun, ensureBuilt, runCli } from '../support/built-cli';
import { LIBFAKETIME } from '../support/faketime';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { waitFor } from '../support/faults';
import { request } from '../support/http';
import { PostgresServerHandle, RedisServerHandle, startPostgresServer, startRedisServer, testPostgresUrl, uniqueSchema } from '../support/services';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';
import { startTestApp, TestApp } from '../support/test-app';

/** How long the archive's PostgreSQL stays stopped, on the server's clocks ("stopped for a minute", issue 23). */
const DOWNTIME_MS = 60_000;
/** A catch-up pass that failed (each logs this). */
const CATCHUP_FAILED = 'audit archive catch-up failed; trying again on the next pass';
const MODEL = { TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' };
/** Catch-up passes every 300 ms over index entries older than 200 ms: the archive is brought up to date within moments. */
const CATCHUP = { TA_ARCHIVE_CATCHUP_MS: '300', TA_ARCHIVE_GRACE_MS: '200' };

type View = { event_id: string; type: string; archived_at: string | null };

/** The archive's rows of each task are exactly the events its live records derive (ids and types), each once. */
async function archivedExactly(db: Client, schema: string, store: StateStore, taskIds: string[]): Promise<void> {
  for (const taskId of taskIds) {
    const rows = await archivedRows(db, schema, taskId);
    const live = await liveEvents(store, taskId);
    expect(new Set(rows.map((r) => r.event_id)).size).toBe(rows.length);
    expect(rows.map((r) => `${r.event_id} ${r.type}`).sort()).toEqual(live.map((e) => `${e.eventId} ${e.type}`).sort());
  }
}

jest.setTimeout(30_000);

describe('the audit archive through faults', () => {
  let llm: FakeOpenAi;
  let pg: PostgresServerHandle;
  let liveRedis: RedisServerHandle;
  /** The server whose archive goes down: the built CLI under libfaketime. */
  let server: CliRun;
  let url: string;
  /** Its live store, read by the test. */
  let store: RedisStateStore;
  let db: Client | undefined;
  const schema = uniqueSchema('archive_down');
  /** Every task the downtime's turns made. */
  const tasks: string[] = [];
  let conversation: string;
  /** When the archive stopped, on the server's clock (rounded up to its Date header's second). */
  let downAt = 0;
  /** The server's clocks' offset from the real ones (libfaketime re-reads it at most once a second). */
  const clockFile = join(mkdtempSync(join(tmpdir(), 'archive-clock-')), 'offset');
  /** The server's wall clock, to the second below: its HTTP Date header (on a connection of its own, so no pooled one is reused across a jump). */
  const serverClock = async () => Date.parse((await request(`${url}/health/live`, { headers: { connection: 'close' } })).headers.get('date')!);
  const logTime = (line: Record<string, unknown>) => Date.parse(String(line.time));

  const connect = async () => {
    const client = new Client({ connectionString: pg.url });
    client.on('error', () => undefined);
    await client.connect();
    return client;
  };

  beforeAll(async () => {
    expect(LIBFAKETIME).toBeDefined(); // apt-get install faketime (.ci/run does)
    ensureBuilt();
    writeFileSync(clockFile, '+0\n');
    [llm, pg, liveRedis] = await Promise.all([startFakeOpenAi(), startPostgresServer(), startRedisServer()]);
    server = runCli(['serve', archiveAgentDir(), '--port', '0'], {
      TA_AUTH_MODE: 'dev',
      TA_LOG_LEVEL: 'info',
      TA_BASE_URL: llm.baseURL,
      ...MODEL,
      ...CATCHUP,
      TA_ARCHIVE_URL: pg.url,
      TA_ARCHIVE_SCHEMA: schema,
      TA_STATE_STORE: 'redis',
      TA_REDIS_URL: liveRedis.url,
      // Both clocks, wall and monotonic (no FAKETIME_DONT_FAKE_MONOTONIC): timers see the minute too.
      LD_PRELOAD: LIBFAKETIME!,
      FAKETIME_TIMESTAMP_FILE: clockFile,
      FAKETIME_CACHE_DURATION: '1',
    });
    url = `http://127.0.0.1:${await server.listening()}`;
    store = new RedisStateStore({ url: liveRedis.url, keyPrefix: 'ta:', archiveIndex: true }); // the CLI's prefix
    db = await connect();
  }, 60_000);
  afterEach(() => llm.discard());
  afterAll(async () => {
    await server?.stop();
    await store?.close();
    await liveRedis?.stop();
    await db?.end().catch(() => undefined);
    await pg?.stop();
    await llm?.close();
  });

  // (Jest runs a block's own tests before its nested blocks: every case sits in a block of its own, so they run in this order.)
  describe('the archive stopped', () => {
    it('every turn still answers as it would, with no added failure', async () => {
      // Archived while it answers (so the archive's pool holds connections the stop breaks).
      llm.script(reply.text('before'));
      const before = await say(url, 'before');
      expect(before.body.status).toBe('Completed');
      tasks.push(before.body.task_id);
      await waitFor(async () => expect(await archivedRows(db!, schema, before.body.task_id)).toHaveLength(3));
      await db!.end();
      db = undefined;

      await pg.halt('fast');
      downAt = (await serverClock()) + 1000;
      // A plain turn, a follow-on, a turn with a tool call, and the conversation of plans (approved, rejected, expired).
      llm.script(reply.text('one'), reply.text('two'), reply.toolCalls([toolCall('r1', 'Notes-read', { id: 'q' })]), reply.text('read q'));
      const one = await say(url, 'one');
      const two = await say(url, 'two', { task_id: one.body.task_id });
      const tool = await say(url, 'read q');
      for (const res of [one, two, tool]) {
        expect(res.status).toBe(200);
        expect(res.body.status).toBe('Completed');
      }
      tasks.push(one.body.task_id, tool.body.task_id);
      conversation = await planConversation(llm, url, url);
      tasks.push(conversation);
      const statuses = async (taskId: string) => (await request(`${url}/Planner/1/tasks/${taskId}`)).body.requests.map((r: { status: string }) => r.status);
      expect(await statuses(one.body.task_id)).toEqual(['Completed', 'Completed']);
      expect(await statuses(tool.body.task_id)).toEqual(['Completed']);
      expect(await statuses(conversation)).toEqual(['Completed', 'Canceled', 'Completed', 'Canceled']);
      // The archive did fail meanwhile (so this proves something): its drains were refused.
      expect(server.logs().some((l) => l.msg === 'audit archive did not take a batch; the catch-up will archive it')).toBe(true);
    });

    it('a DELETE while the archive is down: 503 ARCHIVE_UNAVAILABLE, and nothing deleted', async () => {
      const res = await request(`${url}/Planner/1/tasks/${conversation}`, { method: 'DELETE' });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('ARCHIVE_UNAVAILABLE');
      const task = await request(`${url}/Planner/1/tasks/${conversation}`);
      expect(task.status).toBe(200);
      expect(task.body.requests).toHaveLength(4);
      expect((await liveEvents(store, conversation)).length).toBe(CONVERSATION_EVENTS.length);
    });
  });

  describe('kill -9 of a replica mid-turn, on a shared Redis', () => {
    let redis: RedisServerHandle;
    let proxy: TcpProxy;
    let a: CliRun;
    let b: TestApp;
    let shared: RedisStateStore;
    let runDb: Client;
    const killedSchema = uniqueSchema('archive_killed');

    beforeAll(async () => {
      ensureBuilt();
      redis = await startRedisServer();
      const dir = archiveAgentDir();
      const lease = { TA_TASK_LEASE_MS: '1500', TA_LEASE_SWEEP_MS: '200' };
      // B, the survivor, in this process (it migrates the archive's schema); A, to be killed, the built server as a process,
      // reaching the archive through a proxy the test can hold (its writes then never arrive).
      shared = new RedisStateStore({ url: redis.url, keyPrefix: 'ta:', archiveIndex: true }); // the CLI's prefix
      const archive = { TA_ARCHIVE_URL: testPostgresUrl(), TA_ARCHIVE_SCHEMA: killedSchema };
      b = await startTestApp({
        configPath: dir,
        env: { TA_BASE_URL: llm.baseURL, ...MODEL, ...lease, ...archive, ...CATCHUP },
        store: shared,
      });
      proxy = await startTcpProxy(Number(new URL(testPostgresUrl()).port));
      const viaProxy = Object.assign(new URL(testPostgresUrl()), { port: String(proxy.port) }).toString();
      a = runCli(
        ['serve', dir, '--port', '0'],
        {
          TA_AUTH_MODE: 'dev',
          TA_LOG_LEVEL: 'info',
          TA_BASE_URL: llm.baseURL,
          ...MODEL,
          ...lease,
          TA_STATE_STORE: 'redis',
          TA_REDIS_URL: redis.url,
          ...archive,
          TA_ARCHIVE_URL: viaProxy,
          // A's own catch-up would not matter (it is killed): off, so what A wrote reaches the archive only through B.
          TA_ARCHIVE_CATCHUP_MS: '0',
        },
        { entry: 'dist' },
      );
      await a.listening();
      runDb = new Client({ connectionString: testPostgresUrl() });
      await runDb.connect();
    }, 150_000);
    afterAll(async () => {
      await a?.stop();
      await proxy?.close();
      await b?.close();
      await runDb?.end();
      await redis?.stop();
    });

    it('the survivor sweeps the lease and catches up: every event of every stored request, exactly once', async () => {
      const aUrl = `http://127.0.0.1:${await a.listening()}`;
      // A task over both replicas, archived as it goes.
      llm.script(reply.text('first'), reply.text('second'));
      const first = await say(aUrl, 'first');
      expect((await say(b.url, 'second', { task_id: first.body.task_id })).body.status).toBe('Completed');

      // From now on nothing A writes reaches the archive: a turn it completes, then a turn whose second model call hangs.
      proxy.hold();
      llm.script(reply.text('unarchived'));
      const held = await say(aUrl, 'held');
      expect(held.body.status).toBe('Completed');
      llm.script(reply.toolCalls([toolCall('k1', 'Notes-read', { id: 'k' })]), reply.hang());
      const calls = llm.requests.length;
      const killed = say(aUrl, 'read k, then hang', { task_id: held.body.task_id }).catch((err: unknown) => err);
      await llm.waitForRequest(calls + 1); // the second model call: the tool ran
      a.child.kill('SIGKILL');
      await a.exited;
      await proxy.close();
      expect(await killed).not.toHaveProperty('status'); // the client got no answer: its connection died with A

      // The survivor's lease sweep closes the request (abandoned) with nobody asking; its drain and catch-up archive the rest.
      const taskIds = [first.body.task_id as string, held.body.task_id as string];
      await waitFor(
        async () => expect((await shared.listRequests(DEV_TENANT_ID, held.body.task_id)).map((r) => r.status)).toEqual(['Completed', 'Failed']),
        15_000,
      );
      await waitFor(() => archivedExactly(runDb, killedSchema, shared, taskIds), 15_000);

      const kept = await archivedRows(runDb, killedSchema, held.body.task_id);
      // The held turn's events (only the catch-up could archive them), and the killed request as the store holds it: accepted, then
      // failed by the sweep (what A did in between, its model and tool calls, it never committed).
      expect(kept.map((r) => r.type).slice(0, 4)).toEqual(['request_accepted', 'model_call', 'request_completed', 'request_accepted']);
      expect(kept.at(-1)!.type).toBe('request_failed');
      expect(kept.at(-1)!.payload).toMatchObject({ error: { code: 'ABANDONED' } });
      expect((await archivedRows(runDb, killedSchema, first.body.task_id)).map((r) => r.type)).toEqual([
        ...['request_accepted', 'model_call', 'request_completed'],
        ...['request_accepted', 'model_call', 'request_completed'],
      ]);
      // The survivor's timeline (live records merged with the archive) is the same events.
      for (const taskId of taskIds) {
        const timeline = await request(`${b.url}/Planner/1/tasks/${taskId}/events`);
        expect((timeline.body.events as View[]).map((e) => e.event_id).sort()).toEqual(
          (await archivedRows(runDb, killedSchema, taskId)).map((r) => r.event_id).sort(),
        );
      }
    });
  });

  describe('the archive back', () => {
    it('after a minute: the catch-up holds every event of every request exactly once; the DELETE then goes through', async () => {
      // One more turn late in the downtime, then the rest of the minute passes on the server's clocks.
      llm.script(reply.text('late'));
      const late = await say(url, 'late');
      expect(late.body.status).toBe('Completed');
      tasks.push(late.body.task_id);
      // Catch-up passes failed in real time meanwhile (about 3 a second).
      expect(server.logs().filter((l) => l.msg === CATCHUP_FAILED).length).toBeGreaterThan(3);
      const jump = Math.max(0, downAt + DOWNTIME_MS - (await serverClock())) + 1000;
      writeFileSync(clockFile, `+${Math.ceil(jump / 1000)}s\n`);
      // The server read the file (within a second), and a catch-up pass ran on the moved clocks and failed.
      await waitFor(async () => expect(await serverClock()).toBeGreaterThanOrEqual(downAt + DOWNTIME_MS), 10_000);
      await server.waitForLog((l) => l.msg === CATCHUP_FAILED && logTime(l) >= downAt + DOWNTIME_MS);
      const down = (await serverClock()) - downAt;
      await pg.start();
      db = await connect();

      await waitFor(() => archivedExactly(db!, schema, store, tasks), 15_000);
      const rows = await archivedRows(db, schema, conversation);
      expect(settled(rows.map((r) => r.type))).toEqual(CONVERSATION_EVENTS);
      expect(down).toBeGreaterThanOrEqual(DOWNTIME_MS);

      expect((await request(`${url}/Planner/1/tasks/${conversation}`, { method: 'DELETE' })).status).toBe(204);
      expect((await request(`${url}/Planner/1/tasks/${conversation}`)).status).toBe(404);
      const timeline = await request(`${url}/Planner/1/tasks/${conversation}/events`);
      expect(timeline.status).toBe(200);
      const events = timeline.body.events as View[];
      expect(events.map((e) => e.event_id)).toEqual([...rows.map((r) => r.event_id), events.at(-1)!.event_id]);
      expect(events.at(-1)!.type).toBe('task_deleted');
      expect(events.every((e) => e.archived_at !== null)).toBe(true);
    }, 60_000);
  });
});
