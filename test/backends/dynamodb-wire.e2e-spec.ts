import { createServer, IncomingMessage, request, Server, ServerResponse } from 'node:http';
import { credentialSource } from '../../src/state/backends/dynamodb/aws-credentials';
import { toStateError } from '../../src/state/backends/dynamodb/dynamodb-errors';
import {
  DynamoDbConnectionError,
  DynamoDbServiceError,
  DynamoDbWire,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
} from '../../src/state/backends/dynamodb/dynamodb-wire';
import { StateStoreUnavailableError } from '../../src/state/state.errors';
import { sdkSigner } from '../support/aws-sdk-signer';
import { makeRequest, makeTask } from '../conformance/fixtures';
import { createTestStateTable, DYNAMODB_LOCAL, testDynamoDbEndpoint, uniqueName } from '../support/services';
import { DynamoDbStateStore } from '../../src/state/backends/dynamodb/dynamodb.state-store';

/**
 * The DynamoDB wire (dynamodb-wire.ts) against a DynamoDB of our own at the HTTP boundary: what it
 * sends (signed as the AWS SDK would sign it, items as typed JSON), what it makes of answers and
 * errors, and which it retries. DynamoDB Local runs every real call (the conformance suite);
 * this is for what DynamoDB Local does not check (signatures) or will not do on demand (errors).
 */
interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | 'hang';

class FakeDynamoDb {
  readonly received: Received[] = [];
  answers: Answer[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        const answer = this.answers.shift() ?? { status: 200, body: {} };
        if (answer === 'hang') return;
        res.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0', date: new Date().toUTCString(), ...answer.headers });
        res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const CREDENTIALS = { accessKeyId: 'AKIDWIRE', secretAccessKey: 'wire-secret', sessionToken: 'session-token' };
const fake = new FakeDynamoDb();
beforeAll(() => fake.start());
afterAll(() => fake.stop());
beforeEach(() => {
  fake.received.length = 0;
  fake.answers = [];
});

const wire = (options: Partial<ConstructorParameters<typeof DynamoDbWire>[0]> = {}) =>
  new DynamoDbWire({ region: 'eu-west-1', endpoint: fake.url, credentials: CREDENTIALS, ...options });

describe('DynamoDbWire: what it sends', () => {
  it('a signed JSON 1.0 request: the AWS SDK signer, given what arrived, computes the same Authorization', async () => {
    await wire().send(new GetCommand({ TableName: 't', Key: { pk: 'T#a#b', sk: '#' }, ConsistentRead: true }));
    const [req] = fake.received;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/');
    expect(req!.headers['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(req!.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(req!.headers['x-amz-security-token']).toBe('session-token');
    expect(JSON.parse(req!.body)).toEqual({ TableName: 't', Key: { pk: { S: 'T#a#b' }, sk: { S: '#' } }, ConsistentRead: true });
    const amzDate = req!.headers['x-amz-date'] as string;
    const signingDate = new Date(
      `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
    );
    const signer = sdkSigner(CREDENTIALS, 'eu-west-1');
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(req!.headers.authorization!)![1]!.split(';');
    expect(signedHeaders).toEqual(['content-type', 'host', 'x-amz-date', 'x-amz-security-token', 'x-amz-target']);
    const headers = Object.fromEntries(
      signedHeaders.filter((h) => h !== 'x-amz-date' && h !== 'x-amz-security-token').map((h) => [h, String(req!.headers[h])]),
    );
    const [hostname, port] = String(req!.headers.host).split(':');
    const expected = await signer.sign(
      { method: 'POST', protocol: 'http:', hostname: hostname!, port: Number(port), path: '/', query: {}, headers, body: req!.body },
      { signingDate },
    );
    expect(req!.headers.authorization).toBe(expected.headers.authorization);
  });

  it('items, keys and expression values as typed JSON, in a transaction too; answers read back as plain values', async () => {
    fake.answers = [
      { status: 200, body: {} },
      { status: 200, body: { Item: { pk: { S: 'p' }, n: { N: '42' }, part: { B: 'AAH/' }, m: { M: { l: { L: [{ BOOL: true }, { NULL: true }] } } } } } },
    ];
    await wire().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: 't',
              Item: { pk: 'p', n: 1 },
              ConditionExpression: '#v = :v',
              ExpressionAttributeNames: { '#v': 'version' },
              ExpressionAttributeValues: { ':v': 0 },
            },
          },
          { Delete: { TableName: 't', Key: { pk: 'q', sk: 'r' } } },
        ],
      }),
    );
    expect(JSON.parse(fake.received[0]!.body)).toEqual({
      TransactItems: [
        {
          Put: {
            TableName: 't',
            Item: { pk: { S: 'p' }, n: { N: '1' } },
            ConditionExpression: '#v = :v',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':v': { N: '0' } },
          },
        },
        { Delete: { TableName: 't', Key: { pk: { S: 'q' }, sk: { S: 'r' } } } },
      ],
      ClientRequestToken: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    const { Item } = await wire().send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }));
    expect(Item).toEqual({ pk: 'p', n: 42, part: Buffer.from([0, 1, 255]), m: { l: [true, null] } });
  });

  it('tells the clock the Date of every answer, an error answer too, with when the attempt was sent and answered', async () => {
    const dates: number[][] = [];
    const date = new Date(Math.floor(Date.now() / 1000) * 1000).toUTCString();
    fake.answers = [{ status: 400, body: { __type: 'com.amazonaws.dynamodb.v20120810#ValidationException', message: 'no' }, headers: { date } }];
    const before = Date.now();
    await expect(wire({ onDate: (...d) => dates.push(d) }).send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }))).rejects.toThrow('no');
    expect(dates).toEqual([[Date.parse(date), expect.any(Number), expect.any(Number)]]);
    expect(dates[0]![1]).toBeGreaterThanOrEqual(before);
    expect(dates[0]![2]).toBeGreaterThanOrEqual(dates[0]![1]!);
  });
});

describe('DynamoDbWire: errors and retries', () => {
  it("a refused condition is DynamoDB's error by its type's name, its fields kept, not retried", async () => {
    fake.answers = [
      {
        status: 400,
        body: {
          __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
          Message: 'Transaction cancelled',
          CancellationReasons: [{ Code: 'ConditionalCheckFailed', Item: { version: { N: '3' } } }, { Code: 'None' }],
        },
      },
    ];
    const err = (await wire()
      .send(new TransactWriteCommand({ TransactItems: [] }))
      .catch((e: unknown) => e)) as DynamoDbServiceError;
    expect(err).toBeInstanceOf(DynamoDbServiceError);
    expect([err.name, err.message, err.$fault, err.$metadata.httpStatusCode]).toEqual(['TransactionCanceledException', 'Transaction cancelled', 'client', 400]);
    expect(err.CancellationReasons).toEqual([{ Code: 'ConditionalCheckFailed', Item: { version: { N: '3' } } }, { Code: 'None' }]);
    expect(fake.received).toHaveLength(1);
    expect(toStateError(err, 't')).toBe(err);
  });

  it.each([
    ['a 500', { status: 500, body: { __type: 'com.amazon.coral.service#InternalFailure', message: 'oops' } }],
    ['throttling', { status: 400, body: { __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow down' } }],
  ])('%s is tried once more, and the second answer is the outcome', async (_name, first) => {
    fake.answers = [first, { status: 200, body: { Attributes: { pk: { S: 'p' } } } }];
    expect((await wire().send(new PutCommand({ TableName: 't', Item: { pk: 'p' } }))).Attributes).toEqual({ pk: 'p' });
    expect(fake.received).toHaveLength(2);
    expect(fake.received[1]!.body).toBe(fake.received[0]!.body);
  });

  it('a 500 twice is a server fault, which the store reports as unavailable', async () => {
    const failure = { status: 500, body: { __type: 'InternalServerError', message: 'down' } };
    fake.answers = [failure, failure];
    const err = await wire()
      .send(new PutCommand({ TableName: 't', Item: { pk: 'p' } }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'InternalServerError', $fault: 'server', $metadata: { httpStatusCode: 500 } });
    expect(fake.received).toHaveLength(2);
    expect(toStateError(err, 't')).toBeInstanceOf(StateStoreUnavailableError);
  });

  it('no answer within the attempt time: TimeoutError without an HTTP status (unavailable), after the one retry', async () => {
    fake.answers = ['hang', 'hang'];
    const started = Date.now();
    const err = await wire({ attemptTimeoutMs: 200 })
      .send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DynamoDbConnectionError);
    expect(err).toMatchObject({ name: 'TimeoutError', $metadata: {} });
    expect(fake.received).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(toStateError(err, 't')).toBeInstanceOf(StateStoreUnavailableError);
  });

  it('a refused connection carries its code: a write that certainly did not apply', async () => {
    const closed = new FakeDynamoDb();
    await closed.start();
    const url = closed.url;
    await closed.stop();
    const err = await new DynamoDbWire({ region: 'eu-west-1', endpoint: url, credentials: CREDENTIALS, maxAttempts: 1 })
      .send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ECONNREFUSED' });
    expect(toStateError(err, 't')).toMatchObject({ unsent: true });
  });
});

describe('DynamoDbWire: a replica whose clock is off', () => {
  it("signs at DynamoDB's time once its Date is a minute or more from ours: a refused signature is signed again at once", async () => {
    const ahead = new Date(Math.floor(Date.now() / 1000) * 1000 + 10 * 60_000);
    fake.answers = [
      {
        status: 400,
        body: { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'Signature expired' },
        headers: { date: ahead.toUTCString() },
      },
      { status: 200, body: {}, headers: { date: ahead.toUTCString() } },
      { status: 200, body: {}, headers: { date: new Date().toUTCString() } },
      { status: 200, body: {} },
    ];
    const w = wire({ maxAttempts: 2 });
    await w.send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }));
    const signedAt = fake.received.map((r) => {
      const d = String(r.headers['x-amz-date']);
      return Date.parse(`${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${d.slice(9, 11)}:${d.slice(11, 13)}:${d.slice(13, 15)}Z`);
    });
    expect(fake.received).toHaveLength(2);
    expect(Math.abs(signedAt[0]! - Date.now())).toBeLessThan(5_000);
    expect(Math.abs(signedAt[1]! - ahead.getTime())).toBeLessThan(5_000);
    // Our clock agrees with DynamoDB's again: signed at ours.
    await w.send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }));
    await w.send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }));
    expect(fake.received).toHaveLength(4);
  });

  it('a refused signature with no clock to correct is not retried', async () => {
    fake.answers = [{ status: 400, body: { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'bad key' } }];
    await expect(wire().send(new GetCommand({ TableName: 't', Key: { pk: 'p' } }))).rejects.toMatchObject({ name: 'InvalidSignatureException' });
    expect(fake.received).toHaveLength(1);
  });
});

describe('DynamoDbWire: a transaction whose answer is lost', () => {
  it('carries a ClientRequestToken, the same on its retry and another on the next transaction (as the AWS SDK fills it)', async () => {
    fake.answers = [
      { status: 500, body: { __type: 'InternalServerError', message: 'blip' } },
      { status: 200, body: {} },
      { status: 200, body: {} },
    ];
    const w = wire();
    await w.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: 't', Item: { pk: 'p' } } }] }));
    await w.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName: 't', Item: { pk: 'p' } } }] }));
    const tokens = fake.received.map((r) => (JSON.parse(r.body) as { ClientRequestToken?: string }).ClientRequestToken);
    expect(tokens[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(tokens[1]).toBe(tokens[0]);
    expect(tokens[2]).toMatch(/^[0-9a-f-]{36}$/);
    expect(tokens[2]).not.toBe(tokens[0]);
  });

  it('on DynamoDB Local: a commit applied whose answer the connection lost is retried and succeeds, not a conflict', async () => {
    const table = uniqueName('lost-answer');
    await createTestStateTable(table);
    // In front of DynamoDB Local: the first transaction is applied there, and its answer dropped.
    const target = new URL(testDynamoDbEndpoint());
    let dropped = 0;
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (c: Buffer) => body.push(c));
          answer.on('end', () => {
            if (String(req.headers['x-amz-target']).endsWith('TransactWriteItems') && dropped === 0) {
              dropped++;
              req.socket.destroy();
              return;
            }
            res.writeHead(answer.statusCode!, answer.headers);
            res.end(Buffer.concat(body));
          });
        });
        upstream.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const store = new DynamoDbStateStore({ table, endpoint: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, ...DYNAMODB_LOCAL });
    try {
      const tenant = uniqueName('tenant');
      const task = makeTask(tenant);
      const stored = await store.commit(tenant, { task, expectedVersion: 0, requests: [makeRequest(task, 0)] });
      expect(dropped).toBe(1);
      expect(stored.version).toBe(1);
      expect((await store.getTask(tenant, task.taskId))?.version).toBe(1);
      expect(await store.listRequests(tenant, task.taskId)).toHaveLength(1);
    } finally {
      await store.close();
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

describe('credentialSource (aws-credentials.ts)', () => {
  it('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN) when none are given', async () => {
    const source = credentialSource(undefined, { AWS_ACCESS_KEY_ID: 'id', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'tok' });
    expect(await source()).toEqual({ accessKeyId: 'id', secretAccessKey: 'secret', sessionToken: 'tok' });
  });

  it('a provider is asked once while its credentials are good, by concurrent calls too', async () => {
    let calls = 0;
    const source = credentialSource(() => {
      calls++;
      return Promise.resolve({ accessKeyId: `id${calls}`, secretAccessKey: 's', expiration: new Date(Date.now() + 60 * 60_000) });
    });
    const [a, b] = await Promise.all([source(), source()]);
    expect([a.accessKeyId, b.accessKeyId, (await source()).accessKeyId, calls]).toEqual(['id1', 'id1', 'id1', 1]);
  });

  it('credentials within 5 minutes of their expiry are resolved again', async () => {
    let calls = 0;
    const source = credentialSource(() => {
      calls++;
      return Promise.resolve({ accessKeyId: `id${calls}`, secretAccessKey: 's', expiration: new Date(Date.now() + 4 * 60_000) });
    });
    expect((await source()).accessKeyId).toBe('id1');
    expect((await source()).accessKeyId).toBe('id2');
  });

  it("a failed resolution is the caller's error, and the next call asks again", async () => {
    let calls = 0;
    const source = credentialSource(() =>
      ++calls === 1 ? Promise.reject(new Error('no role yet')) : Promise.resolve({ accessKeyId: 'id', secretAccessKey: 's' }),
    );
    await expect(source()).rejects.toThrow('no role yet');
    expect((await source()).accessKeyId).toBe('id');
  });
});
