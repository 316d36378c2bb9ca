import { DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DYNAMODB_LOCAL, testDynamoDbEndpoint, uniqueName } from '../support/services';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');

describe('teal-agent-server create-dynamodb-table', () => {
  it('creates the state table with its TTL attribute once, and finds it the second time', async () => {
    expect(existsSync(join(ROOT, 'dist', 'cli.js'))).toBe(true); // built by scripts/test.sh
    const table = uniqueName('cli-table');
    const env = {
      PATH: process.env.PATH ?? '',
      TA_DYNAMODB_TABLE: table,
      TA_DYNAMODB_ENDPOINT: testDynamoDbEndpoint(),
      AWS_REGION: DYNAMODB_LOCAL.region,
      AWS_ACCESS_KEY_ID: DYNAMODB_LOCAL.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: DYNAMODB_LOCAL.credentials.secretAccessKey,
    };
    const bin = join(ROOT, 'bin', 'teal-agent-server.js');
    const first = await run(process.execPath, [bin, 'create-dynamodb-table'], { env });
    expect(first.stdout).toBe(`Created DynamoDB table ${table} (TTL on "ttl")\n`);
    const second = await run(process.execPath, [bin, 'create-dynamodb-table'], { env });
    expect(second.stdout).toBe(`Found DynamoDB table ${table} (TTL on "ttl")\n`);

    const client = new DynamoDBClient({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL });
    try {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
      expect(Table?.KeySchema?.map((k) => k.AttributeName)).toEqual(['pk', 'sk']);
      const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
      expect(ttl.TimeToLiveDescription?.AttributeName).toBe('ttl');
    } finally {
      client.destroy();
    }
  });

  it('exits 1 with a message when DynamoDB cannot be reached', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      TA_DYNAMODB_TABLE: 'x-table',
      TA_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    };
    const err = (await run(process.execPath, [join(ROOT, 'bin', 'teal-agent-server.js'), 'create-dynamodb-table'], { env }).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(err.code).toBe(1);
    expect(err.stderr).toBe('Could not create the DynamoDB table: DynamoDB is unreachable at TA_DYNAMODB_ENDPOINT=http://127.0.0.1:9 (ECONNREFUSED)\n');
  });

  it('exits 1 with one line naming what is missing when there are no AWS credentials', async () => {
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: join(ROOT, 'test', 'fixtures', 'no-such-home'), // no ~/.aws
      AWS_EC2_METADATA_DISABLED: 'true',
      TA_DYNAMODB_TABLE: 'x-table',
      AWS_REGION: 'us-east-1',
    };
    const err = (await run(process.execPath, [join(ROOT, 'bin', 'teal-agent-server.js'), 'create-dynamodb-table'], { env }).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(err.code).toBe(1);
    expect(err.stderr).toBe(
      'Could not create the DynamoDB table: DynamoDB: no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an IAM role)\n',
    );
  });
});
