import { ServerHandle, startDynamoDbLocal, startPostgresServer, startRedisServer } from './services';

/**
 * Starts one redis-server, one PostgreSQL and one DynamoDB Local for the whole e2e run (in
 * parallel: DynamoDB Local's JVM and PostgreSQL's initdb take a second or two) and hands their URLs
 * to the test workers through the environment, which workers inherit. Each test file isolates
 * itself by key prefix, schema or table name. A missing binary fails the run with the package to
 * install; nothing is skipped silently.
 */
export default async function globalSetup(): Promise<void> {
  const results = await Promise.allSettled([startRedisServer(), startPostgresServer(), startDynamoDbLocal()]);
  const started = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  if (failed.length) {
    await Promise.all(started.map((s) => s.stop()));
    throw new Error(`Test servers could not start:\n  - ${failed.map((e) => e.message).join('\n  - ')}`);
  }
  const [redis, postgres, dynamodb] = started as ServerHandle[];
  (globalThis as { __testServers?: ServerHandle[] }).__testServers = started;
  process.env.TEST_REDIS_URL = redis.url;
  process.env.TEST_POSTGRES_URL = postgres.url;
  process.env.TEST_DYNAMODB_ENDPOINT = dynamodb.url;
}
