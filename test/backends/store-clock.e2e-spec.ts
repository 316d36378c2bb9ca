/**
 * Each shared backend's `now()` is the store's clock, learnt from its answers (src/state/store-clock.ts):
 * Redis's `TIME` (on connect, and returned by every commit), PostgreSQL's `clock_timestamp()` (on
 * each new connection, and returned by every commit), DynamoDB's HTTP `Date` header (every answer,
 * errors included). The local clock is made wrong on purpose; the store's clock must not be.
 */
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { TaskRecord } from '../../src/state/state.entities';
import { postgresStores } from '../support/postgres-stores';
import { DYNAMODB_LOCAL, testPostgresUrl, testRedisUrl, uniqueName } from '../support/services';

/** The true time, whatever Date.now() is made to say. */
const trueNow = () => performance.timeOrigin + performance.now();

const task: TaskRecord = {
  taskId: 't1',
  sessionId: 's1',
  tenantId: 'ten',
  ownerId: 'o',
  agent: 'A:1',
  status: 'Completed',
  version: 0,
  requestCount: 0,
  lastEventSeq: 0,
  metadata: {},
  createdAt: 'c',
  updatedAt: 'u',
};

describe('the store clock', () => {
  afterEach(() => jest.restoreAllMocks());

  it('Redis: a process whose clock is 30 s behind reads the server clock, after connecting and after each commit', async () => {
    jest.spyOn(Date, 'now').mockImplementation(() => trueNow() - 30_000);
    const store = new RedisStateStore({ url: testRedisUrl(), keyPrefix: `${uniqueName('store-clock')}:` });
    try {
      await store.ping();
      expect(Math.abs(store.now() - trueNow())).toBeLessThan(250);

      // The clock now moves a further 10 s back: the next commit's answer (its TIME) corrects it.
      jest.spyOn(Date, 'now').mockImplementation(() => trueNow() - 40_000);
      const stored = await store.commit('ten', { task, expectedVersion: 0 });
      expect(stored.version).toBe(1);
      expect(Math.abs(store.now() - trueNow())).toBeLessThan(250);
    } finally {
      await store.close();
    }
  });

  it('PostgreSQL: a process whose clock is 30 s behind reads clock_timestamp(), on a new connection and from each commit', async () => {
    const { schema } = await postgresStores('store_clock');
    jest.spyOn(Date, 'now').mockImplementation(() => trueNow() - 30_000);
    // Commits on the pooled connection only: the pipelined lane's new connection would sample the clock too.
    const store = new PostgresStateStore({ url: testPostgresUrl(), schema, pipeline: false });
    try {
      expect(Math.abs(store.now() - (trueNow() - 30_000))).toBeLessThan(250); // no answer yet: the local clock
      await store.ping(); // a new connection samples the clock before it serves
      expect(Math.abs(store.now() - trueNow())).toBeLessThan(250);

      // The clock now moves a further 10 s back: the next commit's answer (its now_ms) corrects it,
      // on the connection already open (no new connection samples it).
      jest.spyOn(Date, 'now').mockImplementation(() => trueNow() - 40_000);
      expect(store.poolStats().total).toBe(1);
      const stored = await store.commit('ten', { task, expectedVersion: 0 });
      expect(stored.version).toBe(1);
      expect(store.poolStats().total).toBe(1);
      expect(Math.abs(store.now() - trueNow())).toBeLessThan(250);
    } finally {
      await store.close();
    }
  });

  describe('DynamoDB', () => {
    let server: Server;
    let endpoint: string;

    beforeAll(async () => {
      // An endpoint whose clock runs 30 s ahead and which refuses everything (as a missing table).
      server = createServer((req, res) => {
        req.resume();
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', date: new Date(Date.now() + 30_000).toUTCString() });
        res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException', message: 'no such table' }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('takes the Date header of every answer, an error too, to within its 1 s resolution', async () => {
      const store = new DynamoDbStateStore({ table: 'none', endpoint, ...DYNAMODB_LOCAL });
      try {
        expect(Math.abs(store.now() - Date.now())).toBeLessThan(50); // no answer yet: the local clock
        await expect(store.getTask('ten', 't1')).rejects.toThrow();
        const ahead = store.now() - Date.now();
        expect(ahead).toBeGreaterThan(29_000);
        expect(ahead).toBeLessThan(31_000);
      } finally {
        await store.close();
      }
    });
  });
});
