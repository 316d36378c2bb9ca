/**
 * Where the same-store baseline keeps its histories (bench/baseline.server.ts with BASELINE_STORE;
 * bench/store-layer.ts calls them alone): Redis, DynamoDB or PostgreSQL, configured by the
 * BASELINE_* variables; `memory`: none (the server's Map).
 */
export type Msg = { role: string; content: string };
/** Where histories live when not in the Map: a read and a write of one conversation's history. */
export interface HistoryStore {
  get(id: string): Promise<Msg[] | undefined>;
  set(id: string, history: Msg[]): Promise<void>;
  /** A store whose turn holds a connection (PostgreSQL): the turn's read and write go through what this gives, then end(). */
  turn?(): Promise<HistoryStore & { end(): void }>;
}

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

const STORES: Record<string, () => Promise<HistoryStore | undefined>> = {
  memory: async () => undefined,
  redis: redisStore,
  dynamodb: dynamoDbStore,
  postgres: postgresStore,
};

/** The history store named `name` (`memory`: undefined, the server keeps its Map). */
export function openHistoryStore(name: string): Promise<HistoryStore | undefined> {
  const open = STORES[name];
  if (!open) throw new Error(`BASELINE_STORE must be one of ${Object.keys(STORES).join(', ')}`);
  return open();
}
