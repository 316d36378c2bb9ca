import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as PgClient } from 'pg';
import { dynamoDbServerEnv, startDynamoDbLocal, startPostgresServer, startRedisServer } from '../../test/support/services';
import { startTcpProxy } from '../../test/support/tcp-proxy';
import { STORE } from './soak-config';

/** The shared store of the fleet: its server, the replicas' environment, and its stall fault. */
export interface SoakStore {
  env: Record<string, string>;
  /** Stalls the store for `ms` (resolves when it answers again); returns the fault's name. */
  stall(ms: number, chance: () => number): Promise<string>;
  /** Stops the store's server and starts it again on the same port and data after `ms`; returns the fault's name. Absent: DynamoDB Local keeps its data in memory only. */
  restart?(ms: number): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Redis: `CLIENT PAUSE` (all commands, or writes only: reads go on, commits wait). PostgreSQL:
 * SIGSTOP of every client backend, SIGCONT after. DynamoDB Local: a proxy before it holds what the
 * replicas send (their calls hang unanswered), then passes it on.
 */
export async function startStore(): Promise<SoakStore> {
  if (STORE === 'redis') {
    // Durable (an append-only file, fsync always): a restart keeps every write it acknowledged, as a production Redis does.
    const redis = await startRedisServer({ durable: true });
    return {
      env: { TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url },
      async stall(ms, chance) {
        const mode = chance() < 0.5 ? 'ALL' : 'WRITE';
        await redisCommand(redis.url, `CLIENT PAUSE ${ms} ${mode}`);
        await sleep(ms);
        return mode === 'ALL' ? 'store paused (CLIENT PAUSE ALL)' : 'store writes paused (CLIENT PAUSE WRITE)';
      },
      async restart(ms) {
        await redis.stop();
        await sleep(ms);
        await redis.start();
        return 'store restarted (redis-server stopped, started on the same port and data)';
      },
      stop: () => redis.stop(),
    };
  }
  if (STORE === 'postgres') {
    const pg = await startPostgresServer();
    return {
      env: { TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: pg.url, TA_POSTGRES_SCHEMA: 'soak' },
      async stall(ms) {
        // A connection of its own each time: a restart (below) ends any earlier one.
        const admin = new PgClient({ connectionString: pg.url });
        await admin.connect();
        try {
          const { rows } = await admin.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
          );
          for (const { pid } of rows) process.kill(pid, 'SIGSTOP');
          await sleep(ms);
          for (const { pid } of rows) process.kill(pid, 'SIGCONT');
        } finally {
          await admin.end();
        }
        return 'store backends stopped (SIGSTOP, then SIGCONT, of every client backend)';
      },
      async restart(ms) {
        // pg_ctl stop -m immediate: every process quits at once, as in a crash; the start recovers from the WAL.
        await pg.halt('immediate');
        await sleep(ms);
        await pg.start();
        return 'store restarted (PostgreSQL stopped -m immediate, started on the same data)';
      },
      stop: () => pg.stop(),
    };
  }
  const ddb = await startDynamoDbLocal();
  const proxy = await startTcpProxy(ddb.port);
  return {
    env: { ...dynamoDbServerEnv('soak', `http://127.0.0.1:${proxy.port}`), TA_DYNAMODB_CREATE_TABLE: 'true' },
    async stall(ms) {
      proxy.hold();
      await sleep(ms);
      proxy.release();
      return 'store calls held (a proxy before DynamoDB Local)';
    },
    stop: async () => {
      await proxy.close();
      await ddb.stop();
    },
  };
}

/** One command on a connection of its own (CLIENT PAUSE must not wait behind anything). */
function redisCommand(url: string, command: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(`${command}\r\n`));
    socket.once('data', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}
