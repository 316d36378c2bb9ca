import { createServer } from 'node:http';

/**
 * The baseline: a bare Node HTTP server doing the same stateful turn as a v3 invoke, with nothing
 * else: a Map of histories, one call to the same model server, the reply appended. No validation,
 * no auth, no telemetry, no store abstraction. Prints its port on stdout.
 *
 * With BASELINE_STORE=redis|dynamodb (the same-store baseline) each history lives in that store
 * instead, with the least a stateful turn needs: one read of the history and one write of it
 * (Redis GET + SET of its JSON; DynamoDB a consistent GetItem + PutItem of an item holding it),
 * so ours ÷ this baseline leaves out the store's own cost (syscalls, request signing). The store
 * clients are loaded only then, so the Map baseline stays as it was.
 *
 * POST /turn {conversation_id?, text} → {conversation_id, output}
 */
const MODEL_URL = process.env.MODEL_URL!;
type Msg = { role: string; content: string };
/** Where histories live when not in the Map: a read and a write of one conversation's history. */
interface HistoryStore {
  get(id: string): Promise<Msg[] | undefined>;
  set(id: string, history: Msg[]): Promise<void>;
}
const histories = new Map<string, Msg[]>();
let nextId = 0;

/** Keys of this process's conversations (ids restart at 1 per process; the store outlives it). */
const PREFIX = process.env.BASELINE_KEY_PREFIX ?? `baseline-${process.pid}-${Date.now().toString(36)}`;

async function redisStore(): Promise<HistoryStore> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(process.env.BASELINE_REDIS_URL!);
  await redis.ping(); // connected before the port is printed
  return {
    get: async (id) => {
      const json = await redis.get(`${PREFIX}:${id}`);
      return json === null ? undefined : (JSON.parse(json) as Msg[]);
    },
    set: async (id, history) => void (await redis.set(`${PREFIX}:${id}`, JSON.stringify(history))),
  };
}

async function dynamoDbStore(): Promise<HistoryStore> {
  const { DynamoDBClient, CreateTableCommand } = await import('@aws-sdk/client-dynamodb');
  const { DynamoDBDocumentClient, GetCommand, PutCommand } = await import('@aws-sdk/lib-dynamodb');
  const TableName = process.env.BASELINE_DYNAMODB_TABLE!;
  // Region and credentials from the usual AWS_* env, as our server takes them.
  const client = new DynamoDBClient({ endpoint: process.env.BASELINE_DYNAMODB_ENDPOINT });
  const doc = DynamoDBDocumentClient.from(client);
  try {
    await client.send(
      new CreateTableCommand({
        TableName,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
  } catch (err) {
    if ((err as Error).name !== 'ResourceInUseException') throw err; // an earlier baseline made it
  }
  return {
    get: async (id) => {
      const { Item } = await doc.send(new GetCommand({ TableName, Key: { pk: `${PREFIX}:${id}` }, ConsistentRead: true }));
      return Item ? (JSON.parse(Item.history as string) as Msg[]) : undefined;
    },
    set: async (id, history) => void (await doc.send(new PutCommand({ TableName, Item: { pk: `${PREFIX}:${id}`, history: JSON.stringify(history) } }))),
  };
}

function listen(store: HistoryStore | undefined): void {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { conversation_id?: string; text: string };
      const id = body.conversation_id ?? String(++nextId);
      // A new conversation has nothing stored: a read all the same, as a turn that does not know.
      const history = (store ? await store.get(id) : histories.get(id)) ?? [{ role: 'system', content: 'You are terse.' }];
      history.push({ role: 'user', content: body.text });
      const r = await fetch(`${MODEL_URL}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench', messages: history }),
      });
      const completion = (await r.json()) as { choices: { message: { content: string } }[] };
      const output = completion.choices[0]!.message.content;
      history.push({ role: 'assistant', content: output });
      if (store) await store.set(id, history);
      else histories.set(id, history);
      const json = JSON.stringify({ conversation_id: id, output });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(json);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${(server.address() as { port: number }).port}\n`);
  });
}

const STORES: Record<string, () => Promise<HistoryStore | undefined>> = {
  memory: async () => undefined,
  redis: redisStore,
  dynamodb: dynamoDbStore,
};
const open = STORES[process.env.BASELINE_STORE ?? 'memory'];
if (!open) throw new Error(`BASELINE_STORE must be one of ${Object.keys(STORES).join(', ')}`);
open().then(listen, (err: Error) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
