import { DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Client } from 'pg';
import { loadEnvConfig } from '../../src/config/env.config';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';
import { MemoryStateStore } from '../../src/state/backends/memory/memory.state-store';
import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { RedisStateStore } from '../../src/state/backends/redis/redis.state-store';
import { createStateStore } from '../../src/state/state-store.factory';
import { StateStoreUnavailableError } from '../../src/state/state.errors';
import { DYNAMODB_LOCAL, testDynamoDbEndpoint, testPostgresUrl, testRedisUrl, uniqueName, uniqueSchema } from '../support/services';

/** The state part of the config, from environment variables as the server reads them. */
const stateConfig = (env: Record<string, string>) => loadEnvConfig({ TA_AUTH_MODE: 'dev', ...env }).state;
const credentials = { dynamoDbCredentials: DYNAMODB_LOCAL.credentials };

describe('createStateStore (TA_STATE_STORE)', () => {
  it('memory: the in-memory store', async () => {
    expect(await createStateStore(stateConfig({ TA_STATE_STORE: 'memory' }))).toBeInstanceOf(MemoryStateStore);
  });

  it('redis: a connected Redis store', async () => {
    const store = await createStateStore(stateConfig({ TA_STATE_STORE: 'redis', TA_REDIS_URL: testRedisUrl() }), { redisKeyPrefix: 'factory:' });
    try {
      expect(store).toBeInstanceOf(RedisStateStore);
      await expect(store.ping()).resolves.toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('postgres: a connected PostgreSQL store, its schema migrated at boot (the rest: test/backends/postgres.state-store.e2e-spec.ts)', async () => {
    const schema = uniqueSchema('ta_factory');
    const store = await createStateStore(stateConfig({ TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: testPostgresUrl(), TA_POSTGRES_SCHEMA: schema }));
    const raw = new Client({ connectionString: testPostgresUrl() });
    await raw.connect();
    try {
      expect(store).toBeInstanceOf(PostgresStateStore);
      expect((store as PostgresStateStore).schema).toBe(schema);
      await expect(store.ping()).resolves.toBeUndefined();
      const { rows } = await raw.query(`SELECT count(*)::int AS n FROM ${schema}.schema_version`);
      expect(rows[0].n).toBeGreaterThan(0);
    } finally {
      await store.close();
      await raw.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await raw.end();
    }
  });

  it('dynamodb with TA_DYNAMODB_CREATE_TABLE=true: creates the missing table, with TTL, at boot', async () => {
    const table = uniqueName('factory');
    const env = {
      TA_STATE_STORE: 'dynamodb',
      TA_DYNAMODB_TABLE: table,
      TA_DYNAMODB_ENDPOINT: testDynamoDbEndpoint(),
      AWS_REGION: 'us-east-1',
    };
    const store = await createStateStore(stateConfig({ ...env, TA_DYNAMODB_CREATE_TABLE: 'true' }), credentials);
    const client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    try {
      expect(store).toBeInstanceOf(DynamoDbStateStore);
      await expect(store.ping()).resolves.toBeUndefined();
      const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
      expect(ttl.TimeToLiveDescription?.AttributeName).toBe('ttl');
      // Booting again against the existing table is fine.
      const again = await createStateStore(stateConfig({ ...env, TA_DYNAMODB_CREATE_TABLE: 'true' }), credentials);
      await again.close();
    } finally {
      await store.close();
      client.destroy();
    }
  });

  it('dynamodb without table creation: a missing table makes the store unavailable (readiness fails)', async () => {
    const env = {
      TA_STATE_STORE: 'dynamodb',
      TA_DYNAMODB_TABLE: uniqueName('absent'),
      TA_DYNAMODB_ENDPOINT: testDynamoDbEndpoint(),
      AWS_REGION: 'us-east-1',
    };
    const store = await createStateStore(stateConfig(env), credentials);
    try {
      await expect(store.ping()).rejects.toBeInstanceOf(StateStoreUnavailableError);
    } finally {
      await store.close();
    }
  });
});
