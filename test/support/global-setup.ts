import { ServerHandle, startDynamoDbLocal, startRedisServer } from './services';

/**
 * Starts one redis-server and one DynamoDB Local for the whole e2e run (in parallel: DynamoDB
 * Local's JVM takes a second or two) and hands their URLs to the test workers through the
 * environment, which workers inherit. Each test file isolates itself by key prefix or table name.
 * A missing binary fails the run with the package to install; nothing is skipped silently.
 */
export default async function globalSetup(): Promise<void> {
  const [redis, dynamodb] = await Promise.allSettled([startRedisServer(), startDynamoDbLocal()]);
  const started = [redis, dynamodb].flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = [redis, dynamodb].flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  if (failed.length) {
    await Promise.all(started.map((s) => s.stop()));
    throw new Error(`Test servers could not start:\n  - ${failed.map((e) => e.message).join('\n  - ')}`);
  }
  (globalThis as { __testServers?: ServerHandle[] }).__testServers = started;
  process.env.TEST_REDIS_URL = (redis as PromiseFulfilledResult<ServerHandle>).value.url;
  process.env.TEST_DYNAMODB_ENDPOINT = (dynamodb as PromiseFulfilledResult<ServerHandle>).value.url;
}
