import { DYNAMODB_LOCAL, startDynamoDbLocal, startRedisServer, ServerHandle } from '../test/support/services';
import { dynamoDbCountingProxy, redisCounter, StoreCounter } from './store-counters';

/** The state stores the benchmark runs against; each entry is the env that selects it. */
export interface StoreEnv {
  name: string;
  env: Record<string, string>;
  /** The same-store baseline's env (bench/baseline.server.ts with BASELINE_STORE), for Redis and DynamoDB. */
  baselineEnv?: Record<string, string>;
  /**
   * Counts the store's round trips: a counter, and the env a server (ours, the same-store
   * baseline) must run with to be counted (for DynamoDB the endpoint is the counting proxy's, so
   * that server is not the measured one).
   */
  counting?: () => Promise<{ counter: StoreCounter; env: Record<string, string>; baselineEnv: Record<string, string> }>;
}

/**
 * Memory always; Redis and DynamoDB Local too, started here as for the tests (real servers on
 * loopback). `BENCH_STORES=memory` limits the run.
 */
export async function startBenchStores(): Promise<{ envs: StoreEnv[]; stop: () => Promise<void> }> {
  const wanted = new Set((process.env.BENCH_STORES ?? 'memory,redis,dynamodb').split(','));
  const envs: StoreEnv[] = [];
  const servers: ServerHandle[] = [];
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
  return { envs, stop: async () => void (await Promise.all(servers.map((s) => s.stop()))) };
}
