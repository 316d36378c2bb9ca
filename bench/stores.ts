import { Client } from 'pg';
import { DYNAMODB_LOCAL, startDynamoDbLocal, startPostgresServer, startRedisServer, ServerHandle } from '../test/support/services';
import { postgresCountingProxy } from './postgres-counter';
import { dynamoDbCountingProxy, redisCounter, StoreCounter } from './store-counters';

/** The state stores the benchmark runs against; each entry is the env that selects it. */
export interface StoreEnv {
  name: string;
  env: Record<string, string>;
  /** The same-store baseline's env (bench/baseline.server.ts with BASELINE_STORE), for Redis, DynamoDB and PostgreSQL. */
  baselineEnv?: Record<string, string>;
  /**
   * Counts the store's round trips: a counter, and the env a server (ours, the same-store
   * baseline) must run with to be counted (for DynamoDB the endpoint is the counting proxy's, so
   * that server is not the measured one).
   */
  counting?: () => Promise<{ counter: StoreCounter; env: Record<string, string>; baselineEnv: Record<string, string> }>;
}

export interface BenchStores {
  envs: StoreEnv[];
  /**
   * The run's PostgreSQL (its URL, plain TCP): BENCH_POSTGRES_URL's, else the one started for the
   * postgres store, else one started on the first call (for the audit archive, BENCH_ARCHIVE, on a
   * run without the postgres store); stopped with the stores.
   */
  postgres: () => Promise<string>;
  stop: () => Promise<void>;
}

/**
 * Memory always; Redis, DynamoDB Local and PostgreSQL too, started here as for the tests (real
 * servers on loopback; PostgreSQL from the Debian package, initdb into a temporary directory).
 * `BENCH_STORES=memory` limits the run. `BENCH_POSTGRES_URL` names a PostgreSQL to use instead of
 * starting one (plain TCP: the round-trip counter reads the wire protocol); ours and the
 * same-store baseline then work in a schema of the run's own, dropped at the end.
 */
export async function startBenchStores(): Promise<BenchStores> {
  const wanted = new Set((process.env.BENCH_STORES ?? 'memory,redis,dynamodb,postgres').split(','));
  const envs: StoreEnv[] = [];
  const servers: Pick<ServerHandle, 'stop'>[] = [];
  let postgresUrl: Promise<string> | undefined;
  // The PostgreSQL of the run: BENCH_POSTGRES_URL's, or one started here (once, on first need).
  const postgres = (): Promise<string> =>
    (postgresUrl ??= (async () => {
      const given = process.env.BENCH_POSTGRES_URL;
      if (given) return given;
      const pg = await startPostgresServer();
      servers.push(pg);
      return pg.url;
    })());
  if (wanted.has('memory')) envs.push({ name: 'memory', env: { TA_STATE_STORE: 'memory' } });
  if (wanted.has('redis')) {
    const redis = await startRedisServer();
    servers.push(redis);
    const env = { TA_STATE_STORE: 'redis', TA_REDIS_URL: redis.url };
    const baselineEnv = { BASELINE_STORE: 'redis', BASELINE_REDIS_URL: redis.url };
    envs.push({ name: 'redis', env, baselineEnv, counting: async () => ({ counter: redisCounter(redis.url), env, baselineEnv }) });
  }
  if (wanted.has('dynamodb')) {
    const ddb = await startDynamoDbLocal();
    servers.push(ddb);
    const aws = {
      AWS_REGION: DYNAMODB_LOCAL.region,
      AWS_ACCESS_KEY_ID: DYNAMODB_LOCAL.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: DYNAMODB_LOCAL.credentials.secretAccessKey,
    };
    const env = { TA_STATE_STORE: 'dynamodb', TA_DYNAMODB_ENDPOINT: ddb.url, TA_DYNAMODB_TABLE: 'bench-state', TA_DYNAMODB_CREATE_TABLE: 'true', ...aws };
    // A table of its own (one string key, the history one attribute), made by the baseline at start.
    const baselineEnv = { BASELINE_STORE: 'dynamodb', BASELINE_DYNAMODB_ENDPOINT: ddb.url, BASELINE_DYNAMODB_TABLE: 'bench-baseline', ...aws };
    const counting = async () => {
      const proxy = await dynamoDbCountingProxy(ddb.url);
      return {
        counter: proxy,
        env: { ...env, TA_DYNAMODB_ENDPOINT: proxy.url },
        baselineEnv: { ...baselineEnv, BASELINE_DYNAMODB_ENDPOINT: proxy.url },
      };
    };
    envs.push({ name: 'dynamodb', env, baselineEnv, counting });
  }
  if (wanted.has('postgres')) {
    const given = process.env.BENCH_POSTGRES_URL;
    const url = await postgres();
    const schema = given ? `bench_${process.pid}_${Date.now().toString(36)}` : 'bench';
    if (given) servers.push({ stop: () => dropSchema(url, schema) });
    envs.push(postgresBenchEnv(url, schema));
  }
  return { envs, postgres, stop: async () => void (await Promise.all(servers.map((s) => s.stop()))) };
}

/**
 * PostgreSQL at `url`: ours with its tables in `schema` (migrated at its first boot), the
 * same-store baseline with its table there too; counted through a proxy reading the wire protocol
 * (bench/postgres-counter.ts: one ReadyForQuery a round trip), which both then connect to.
 */
export function postgresBenchEnv(url: string, schema: string): StoreEnv {
  const env = { TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: url, TA_POSTGRES_SCHEMA: schema };
  const baselineEnv = { BASELINE_STORE: 'postgres', BASELINE_POSTGRES_URL: url, BASELINE_POSTGRES_SCHEMA: schema, BASELINE_POSTGRES_TABLE: 'bench_baseline' };
  const counting = async () => {
    const target = new URL(url);
    const proxy = await postgresCountingProxy(Number(target.port || 5432), target.hostname);
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    return {
      counter: proxy,
      env: { ...env, TA_POSTGRES_URL: through.href },
      baselineEnv: { ...baselineEnv, BASELINE_POSTGRES_URL: through.href },
    };
  };
  return { name: 'postgres', env, baselineEnv, counting };
}

async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
