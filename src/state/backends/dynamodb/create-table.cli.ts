#!/usr/bin/env node
/**
 * Creates the DynamoDB state table (with TTL on `ttl`) once, for deployments that do not let the
 * server create it at boot: `teal-agent-server create-dynamodb-table` (or
 * `node dist/state/backends/dynamodb/create-table.cli.js`).
 * Reads TA_DYNAMODB_TABLE (default teal-agent-state), TA_DYNAMODB_ENDPOINT (optional) and
 * AWS_REGION (default us-east-1); credentials as the server takes them (aws-credentials.ts).
 */
import { dynamoDbBootError } from '../../backend-boot-error';
import { createStateTable } from './dynamodb-table';
import { DynamoDbWire } from './dynamodb-wire';

export async function createTableFromEnv(): Promise<void> {
  const table = process.env.TA_DYNAMODB_TABLE || 'teal-agent-state';
  const endpoint = process.env.TA_DYNAMODB_ENDPOINT || undefined;
  const region = process.env.AWS_REGION || 'us-east-1';
  const created = await (async () => createStateTable(new DynamoDbWire({ region, endpoint, maxAttempts: 3 }), table))().catch((err: unknown) => {
    throw dynamoDbBootError(err, { table, endpoint, region });
  });
  process.stdout.write(`${created ? 'Created' : 'Found'} DynamoDB table ${table} (TTL on "ttl")\n`);
}

export function reportCreateTableFailure(err: unknown): void {
  process.stderr.write(`Could not create the DynamoDB table: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}

if (require.main === module) createTableFromEnv().catch(reportCreateTableFailure);
