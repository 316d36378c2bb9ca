import { Agent, createServer, request as httpRequest } from 'node:http';

/**
 * The baseline: a bare Node HTTP server doing the same stateful turn as a v3 invoke, with nothing
 * else: a Map of histories, one call to the same model server, the reply appended. No validation,
 * no auth, no telemetry, no store abstraction. Prints its port on stdout.
 *
 * With BASELINE_STORE=redis|dynamodb|postgres (the same-store baseline) each history lives in
 * that store instead, with the least a stateful turn needs: one read of the history and one write
 * of it (Redis GET + SET of its JSON; DynamoDB a consistent GetItem + PutItem of an item holding
 * it; PostgreSQL a bare SELECT and an INSERT … ON CONFLICT DO UPDATE of a row holding it, on one
 * connection the turn takes from a node-postgres pool), so ours ÷ this baseline leaves out the
 * store's own cost (syscalls, request signing, the wire protocol). The store clients are loaded
 * only then, so the Map baseline stays as it was.
 *
 * It calls the model over `node:http` with a keep-alive agent, as ours does (BASELINE_MODEL_CLIENT=
 * fetch: global `fetch` instead, for information: it costs several times the CPU a turn).
 *
 * POST /turn {conversation_id?, text} → {conversation_id, output}
 * POST /turn/sse, the same body, the same turn with the model streaming (`stream: true`): an SSE
 * answer, `event: partial-response` {conversation_id, output_partial} per content delta as it
 * comes, then `event: final-response` {conversation_id, output} once the history is stored.
 */
const MODEL_URL = process.env.MODEL_URL!;
type Msg = { role: string; content: string };
/** Where histories live when not in the Map: a read and a write of one conversation's history. */
interface HistoryStore {
  get(id: string): Promise<Msg[] | undefined>;
  set(id: string, history: Msg[]): Promise<void>;
  /** A store whose turn holds a connection (PostgreSQL): the turn's read and write go through what this gives, then end(). */
  turn?(): Promise<HistoryStore & { end(): void }>;
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

/**
 * PostgreSQL: a table of its own (BASELINE_POSTGRES_TABLE in BASELINE_POSTGRES_SCHEMA, made at
 * start), a text key and the history's JSON as text. A turn takes one connection from a pg Pool
 * (BASELINE_POSTGRES_POOL_MAX, default 16: the bench's concurrency, so no turn waits for one) and
 * holds it for its read and its write: two statements, unnamed, parameterised (the extended
 * protocol, one round trip each, as ours sends them). Idle connections are kept 30 s, as ours.
 */
async function postgresStore(): Promise<HistoryStore> {
  const { Pool } = await import('pg');
  const schema = process.env.BASELINE_POSTGRES_SCHEMA ?? 'public';
  const table = `"${schema}"."${process.env.BASELINE_POSTGRES_TABLE ?? 'bench_baseline'}"`;
  const pool = new Pool({
    connectionString: process.env.BASELINE_POSTGRES_URL!,
    max: Number(process.env.BASELINE_POSTGRES_POOL_MAX ?? 16),
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', () => undefined);
  const setup = await pool.connect();
  try {
    // Concurrent starts on one database may both try to make them: the loser's error is harmless.
    for (const ddl of [`CREATE SCHEMA IF NOT EXISTS "${schema}"`, `CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, history text NOT NULL)`]) {
      await setup.query(ddl).catch((err: { code?: string }) => {
        if (err.code !== '23505' && err.code !== '42P06' && err.code !== '42P07') throw err;
      });
    }
  } finally {
    setup.release();
  }
  const none = () => Promise.reject(new Error('a PostgreSQL turn reads and writes through turn()'));
  return {
    get: none,
    set: none,
    async turn() {
      const client = await pool.connect();
      return {
        get: async (id) => {
          const { rows } = await client.query<{ history: string }>(`SELECT history FROM ${table} WHERE id = $1`, [`${PREFIX}:${id}`]);
          return rows.length ? (JSON.parse(rows[0]!.history) as Msg[]) : undefined;
        },
        set: async (id, history) =>
          void (await client.query(`INSERT INTO ${table} (id, history) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET history = EXCLUDED.history`, [
            `${PREFIX}:${id}`,
            JSON.stringify(history),
          ])),
        end: () => client.release(),
      };
    },
  };
}

/** The model's non-streamed answer. */
type Completion = { choices: { message: { content: string } }[] };

/**
 * The model client: `node:http` over a keep-alive agent (as ours calls it: one kept-alive socket
 * per concurrent call, up to 64), one request a turn with its content-length, the answer read and
 * parsed. BASELINE_MODEL_CLIENT=fetch: global `fetch` (undici) instead, for information.
 */
const MODEL = new URL(`${MODEL_URL}/v1/chat/completions`);
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** POSTs `body` to the model; `onData` gets the answer's bytes as they come; resolves at its end. */
function postModelHttp(body: unknown, onData: (chunk: Buffer) => void): Promise<void> {
  const json = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        agent,
        host: MODEL.hostname,
        port: MODEL.port,
        path: MODEL.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': json.length },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`the model answered ${res.statusCode}`));
        }
        res.on('data', onData);
        res.on('end', resolve);
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(json);
  });
}

async function postModelFetch(body: unknown, onData: (chunk: Buffer) => void): Promise<void> {
  const r = await fetch(MODEL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`the model answered ${r.status}`);
  for await (const chunk of r.body!) onData(Buffer.from(chunk));
}

const CLIENTS: Record<string, typeof postModelHttp> = { http: postModelHttp, fetch: postModelFetch };
const postModel = CLIENTS[process.env.BASELINE_MODEL_CLIENT ?? 'http'];
if (!postModel) throw new Error(`BASELINE_MODEL_CLIENT must be one of ${Object.keys(CLIENTS).join(', ')}`);

/** One non-streamed completion: the reply's text. */
async function complete(messages: Msg[]): Promise<string> {
  const chunks: Buffer[] = [];
  await postModel!({ model: 'bench', messages }, (c) => chunks.push(c));
  return (JSON.parse(Buffer.concat(chunks).toString()) as Completion).choices[0]!.message.content;
}

/**
 * One streamed completion (`stream: true`, usage included, as ours asks): `onDelta` gets each
 * content delta as its `data:` frame arrives; resolves with the whole reply at `data: [DONE]`.
 */
async function completeStreamed(messages: Msg[], onDelta: (text: string) => void): Promise<string> {
  let buffer = '';
  let output = '';
  await postModel!({ model: 'bench', messages, stream: true, stream_options: { include_usage: true } }, (c) => {
    buffer += c.toString();
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of frame.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') continue;
        const delta = (JSON.parse(data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content;
        if (delta) {
          output += delta;
          onDelta(delta);
        }
      }
    }
  });
  return output;
}

const sseFrame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

function listen(store: HistoryStore | undefined): void {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const streamed = req.url === '/turn/sse';
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { conversation_id?: string; text: string };
      const id = body.conversation_id ?? String(++nextId);
      const held = store?.turn ? await store.turn() : undefined;
      const turnStore = held ?? store;
      // A new conversation has nothing stored: a read all the same, as a turn that does not know.
      const history = (turnStore ? await turnStore.get(id) : histories.get(id)) ?? [{ role: 'system', content: 'You are terse.' }];
      history.push({ role: 'user', content: body.text });
      let output: string;
      if (streamed) {
        // Each content delta forwarded as it comes, one frame each; the final frame once the history is stored.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        output = await completeStreamed(history, (delta) => res.write(sseFrame('partial-response', { conversation_id: id, output_partial: delta })));
      } else {
        output = await complete(history);
      }
      history.push({ role: 'assistant', content: output });
      if (turnStore) await turnStore.set(id, history);
      else histories.set(id, history);
      held?.end();
      if (streamed) {
        res.end(sseFrame('final-response', { conversation_id: id, output }));
        return;
      }
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
  postgres: postgresStore,
};
const open = STORES[process.env.BASELINE_STORE ?? 'memory'];
if (!open) throw new Error(`BASELINE_STORE must be one of ${Object.keys(STORES).join(', ')}`);
open().then(listen, (err: Error) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
