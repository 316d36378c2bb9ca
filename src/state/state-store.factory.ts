import type { EnvConfig } from '../config/env.config';
import { dynamoDbBootError } from './backend-boot-error';
import { StateStore } from './state-store';
import type { DynamoDbStateStoreOptions } from './backends/dynamodb/dynamodb.state-store';
import { MemoryStateStore } from './backends/memory/memory.state-store';

export interface StateStoreFactoryOptions {
  /** Prefix of every Redis key (default `ta:`); tests give each file its own. */
  redisKeyPrefix?: string;
  /** Explicit DynamoDB credentials (DynamoDB Local in tests); unset: the environment's, else the AWS SDK's default chain. */
  dynamoDbCredentials?: DynamoDbStateStoreOptions['credentials'];
  /** NODE_ENV=production: a Redis `allkeys-*` eviction policy refuses the boot (otherwise a warning). */
  production?: boolean;
  /** Where boot warnings go (the Redis eviction check). */
  logger?: { warn(message: string): void };
  /**
   * Keep the archive index (StateStore.listUnarchived): set when the audit archive is configured
   * (TA_ARCHIVE_URL). Default false: commits write nothing for it.
   */
  archiveIndex?: boolean;
}

/**
 * The store `TA_STATE_STORE` selects. For DynamoDB with `TA_DYNAMODB_CREATE_TABLE=true` the table
 * (and its TTL) is created at boot when missing; otherwise it must exist (see create-table.cli.ts).
 * Backends are loaded only when selected: pg and the AWS SDK's credential chain add many modules
 * to the start-up of a server that does not use them (the Redis and DynamoDB stores speak their
 * protocols themselves: redis-wire.ts, dynamodb-wire.ts). For Redis, the eviction policy is checked at boot
 * (redis-eviction.ts): `allkeys-*` refuses a production boot and warns otherwise. For PostgreSQL,
 * the schema is migrated at boot (`TA_POSTGRES_MIGRATE=auto`) or checked (`off`: postgres-migrate.ts);
 * a database it cannot reach or a schema newer than this release refuses the boot in one line.
 */
export async function createStateStore(config: EnvConfig['state'], options: StateStoreFactoryOptions = {}): Promise<StateStore> {
  const archiveIndex = options.archiveIndex ?? false;
  switch (config.store) {
    case 'memory':
      return new MemoryStateStore({ archiveIndex });
    case 'redis': {
      if (!config.redisUrl) throw new Error('TA_REDIS_URL is required when TA_STATE_STORE=redis');
      const { RedisStateStore } = require('./backends/redis/redis.state-store') as typeof import('./backends/redis/redis.state-store');
      const { checkRedisEviction } = require('./backends/redis/redis-eviction') as typeof import('./backends/redis/redis-eviction');
      const store = new RedisStateStore({ url: config.redisUrl, keyPrefix: options.redisKeyPrefix, archiveIndex });
      try {
        await checkRedisEviction(store, { production: options.production ?? false, logger: options.logger });
      } catch (err) {
        await store.close();
        throw err;
      }
      return store;
    }
    case 'dynamodb': {
      if (!config.dynamodb) throw new Error('TA_DYNAMODB_TABLE is required when TA_STATE_STORE=dynamodb');
      const { table, endpoint, region, createTable } = config.dynamodb;
      const { DynamoDbStateStore } = require('./backends/dynamodb/dynamodb.state-store') as typeof import('./backends/dynamodb/dynamodb.state-store');
      const { createStateTable } = require('./backends/dynamodb/dynamodb-table') as typeof import('./backends/dynamodb/dynamodb-table');
      const store = new DynamoDbStateStore({ table, endpoint, region, credentials: options.dynamoDbCredentials, archiveIndex });
      if (createTable) {
        try {
          await createStateTable(store.dynamoDbWire, table);
        } catch (err) {
          await store.close();
          throw dynamoDbBootError(err, { table, endpoint, region });
        }
      }
      return store;
    }
    case 'postgres': {
      if (!config.postgres) throw new Error('TA_POSTGRES_URL is required when TA_STATE_STORE=postgres');
      const { url, schema, poolMax, acquireTimeoutMs, statementTimeoutMs, migrate, preparedStatements, pipeline } = config.postgres;
      const { PostgresStateStore } = require('./backends/postgres/postgres.state-store') as typeof import('./backends/postgres/postgres.state-store');
      const { postgresBootError } = require('./backends/postgres/postgres-errors') as typeof import('./backends/postgres/postgres-errors');
      const store = new PostgresStateStore({ url, schema, poolMax, acquireTimeoutMs, statementTimeoutMs, archiveIndex, preparedStatements, pipeline });
      try {
        await store.prepare(migrate);
      } catch (err) {
        await store.close();
        throw postgresBootError(err, { url, schema });
      }
      return store;
    }
  }
}
