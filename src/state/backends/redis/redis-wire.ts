import { createHash } from 'node:crypto';
import { isIP, connect as netConnect, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { encodeCommand, ReplyError, RespArg, RespParser, RespReply } from './redis-resp';

export { ReplyError } from './redis-resp';
export type { RespArg, RespReply } from './redis-resp';

/** A command that was never written: no connection was ready. It certainly did not run. */
export class RedisUnsentError extends Error {
  override readonly name = 'RedisUnsentError';
}

/** The connection closed (or broke) before the command's reply came: it may or may not have run. */
export class RedisConnectionError extends Error {
  override readonly name = 'RedisConnectionError';
}

/** No reply within the command's timeout: it may still run; its late reply is read and dropped. */
export class RedisTimeoutError extends Error {
  override readonly name = 'RedisTimeoutError';
}

export interface RedisWireOptions {
  /** A connection not made (TCP, TLS, AUTH and SELECT) within this long is dropped and tried again. */
  connectTimeoutMs: number;
  /** Each command's reply is waited for this long unless its caller says otherwise (`commandTimeoutMs`). */
  commandTimeoutMs: number;
  /** How long to wait before the `attempt`th reconnection (1, 2, …) after the connection was lost. */
  retryDelayMs(attempt: number): number;
}

/**
 * Commands awaiting their reply at most: more are refused at once (RedisUnsentError) rather than
 * queued behind a Redis that does not answer, whose timed-out commands stay in the queue until
 * their late replies come or the connection goes.
 */
export const MAX_PENDING_COMMANDS = 10_000;

/** One command awaiting its reply, in the order sent (Redis replies in that order). */
interface Pending {
  /** Its caller's callback; cleared once the caller was told it timed out (its late reply is dropped). */
  settle?: (err: Error | undefined, reply: RespReply) => void;
  /** When (performance.now()) its caller stops waiting; 0: no deadline of its own. */
  deadline: number;
}

/** One command of a batch: its arguments and what turns its reply into the value the caller gets. */
interface BatchCommand {
  args: RespArg[];
  convert?: (reply: RespReply) => unknown;
}

/** What a batch answers: per command, its error or its value, as ioredis reported a MULTI or a pipeline. */
export type BatchResults = [Error | null, unknown][];

/** Commands sent together; `exec` writes them in one socket write (in MULTI … EXEC for a transaction). */
export class RedisBatch {
  private readonly commands: BatchCommand[] = [];

  constructor(
    private readonly wire: RedisWire,
    private readonly transaction: boolean,
  ) {}

  hget(key: string, field: string): this {
    return this.add(['HGET', key, field]);
  }

  hgetall(key: string): this {
    return this.add(['HGETALL', key], pairsToObject);
  }

  exists(key: string): this {
    return this.add(['EXISTS', key]);
  }

  lrange(key: string, start: number, stop: number): this {
    return this.add(['LRANGE', key, start, stop]);
  }

  /** Sends the batch. Resolves null when Redis aborted the transaction (a WATCHed key changed). */
  exec(): Promise<BatchResults | null> {
    return this.wire.sendBatch(this.commands, this.transaction);
  }

  private add(args: RespArg[], convert?: (reply: RespReply) => unknown): this {
    this.commands.push({ args, convert });
    return this;
  }
}

/** What the connection is doing: as ioredis named its states, for the store's readiness checks. */
export type RedisWireStatus = 'wait' | 'connecting' | 'ready' | 'reconnecting' | 'end';

/**
 * One connection to Redis, speaking RESP2 itself (redis-resp.ts) in place of ioredis, which was a
 * Redis turn's largest cost after the store's own work and ~80 ms of the server's start-up (loading
 * it; issue 27, docs/configuration.md, "Redis's wire"). What the store needs and no more:
 *
 * - `redis://[[user]:password@]host[:port][/db]`, `rediss://` for TLS (Node's CAs, NODE_EXTRA_CA_CERTS,
 *   the host's name checked); AUTH and SELECT on every connection before it is ready.
 * - Commands are written as they are called, never queued while disconnected (RedisUnsentError);
 *   replies are matched to commands in order. Each command waits `commandTimeoutMs` (read as it is
 *   sent) for its reply, one timer for all of them.
 * - A lost connection fails the commands awaiting replies (RedisConnectionError) and is made again
 *   after `retryDelayMs(attempt)`, for as long as the wire is not closed; 'ready' is emitted on
 *   every connection made.
 * - Lua scripts by their SHA-1 (EVALSHA), sent whole once (EVAL) when Redis does not know them.
 */
export class RedisWire {
  status: RedisWireStatus = 'wait';
  /** The reply timeout of commands sent from now on (the store sets it around calls that carry more). */
  commandTimeoutMs: number;
  private readonly host: string;
  private readonly port: number;
  private readonly tls: boolean;
  /** AUTH's arguments and SELECT's database, sent first on every connection. */
  private readonly auth?: string[];
  private readonly db: number;
  private socket?: Socket;
  private readonly parser = new RespParser(
    (reply) => this.onReply(reply),
    (err) => this.socket?.destroy(err),
  );
  /** Commands awaiting replies, oldest first from `head` (an array with a moving head: no shift per reply). */
  private pending: Pending[] = [];
  private head = 0;
  /** The one timer for reply deadlines, armed for the earliest one, and when it fires. */
  private timer?: NodeJS.Timeout;
  private timerAt = Infinity;
  private attempts = 0;
  private retry?: NodeJS.Timeout;
  private readonly readyListeners = new Set<() => void>();
  private connecting?: Promise<void>;
  /** Commands queued for this turn's one socket write (`write`), and how many entries of `pending` are theirs (the last ones). */
  private outbox = '';
  private unwritten = 0;
  private flushScheduled = false;

  constructor(
    url: string,
    private readonly options: RedisWireOptions,
  ) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new Error(`not a redis:// or rediss:// URL: ${parsed.protocol}`);
    this.tls = parsed.protocol === 'rediss:';
    this.host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname || '127.0.0.1';
    this.port = Number(parsed.port || 6379);
    const password = decodeURIComponent(parsed.password);
    const user = decodeURIComponent(parsed.username);
    if (password) this.auth = user ? [user, password] : [password];
    else if (user) this.auth = [user]; // redis://secret@host: the password alone, as ioredis read it
    const db = parsed.pathname.replace(/^\//, '');
    this.db = db ? Number(db) : 0;
    if (!Number.isInteger(this.db) || this.db < 0) throw new Error(`not a Redis database number: ${db}`);
    this.commandTimeoutMs = options.commandTimeoutMs;
  }

  /** Called on every connection made ready (the first and each after a loss). */
  onReady(listener: () => void): void {
    this.readyListeners.add(listener);
  }

  offReady(listener: () => void): void {
    this.readyListeners.delete(listener);
  }

  /** Connects, the first time (later losses reconnect by themselves); resolves once ready. */
  connect(): Promise<void> {
    if (this.status === 'ready') return Promise.resolve();
    if (this.status === 'end') return Promise.reject(new RedisUnsentError('Redis connection is closed'));
    this.connecting ??= new Promise<void>((resolve, reject) => {
      const ready = () => {
        this.offReady(ready);
        resolve();
      };
      this.onReady(ready);
      if (this.status === 'wait') this.open((err) => (this.offReady(ready), reject(err)));
    }).finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /** Closes the connection for good: commands awaiting replies fail, nothing reconnects. */
  disconnect(): void {
    this.status = 'end';
    clearTimeout(this.retry);
    this.socket?.destroy();
    this.socket = undefined;
    this.failPending(new RedisConnectionError('Redis connection is closed'));
  }

  /** One command; its reply as RESP gives it (bulk strings as UTF-8 strings, errors rejected as ReplyError). */
  call(...args: RespArg[]): Promise<RespReply> {
    return this.send(args, this.commandTimeoutMs);
  }

  get(key: string): Promise<string | null> {
    return this.call('GET', key) as Promise<string | null>;
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.call('HGET', key, field) as Promise<string | null>;
  }

  time(): Promise<[string, string]> {
    return this.call('TIME') as Promise<[string, string]>;
  }

  ping(): Promise<string> {
    return this.call('PING') as Promise<string>;
  }

  config(...args: RespArg[]): Promise<RespReply> {
    return this.call('CONFIG', ...args);
  }

  zrangebylex(key: string, ...args: RespArg[]): Promise<string[]> {
    return this.call('ZRANGEBYLEX', key, ...args) as Promise<string[]>;
  }

  zrangebyscore(key: string, ...args: RespArg[]): Promise<string[]> {
    return this.call('ZRANGEBYSCORE', key, ...args) as Promise<string[]>;
  }

  /**
   * A Lua script's call: EVALSHA, and EVAL once when Redis does not have the script (NOSCRIPT: that
   * call ran nothing). Both wait for the reply timeout as it was when called: the EVAL is sent after
   * the caller may have put `commandTimeoutMs` back (a commit's longer timeout holds for it too).
   */
  async runScript(script: RedisScript, numKeys: number, ...args: RespArg[]): Promise<RespReply> {
    const timeoutMs = this.commandTimeoutMs;
    try {
      return await this.send(['EVALSHA', script.sha, numKeys, ...args], timeoutMs);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return this.send(['EVAL', script.lua, numKeys, ...args], timeoutMs);
    }
  }

  /** Commands in MULTI … EXEC: run together, nothing else between them. */
  multi(): RedisBatch {
    return new RedisBatch(this, true);
  }

  /** Commands sent together, each on its own (no transaction). */
  pipeline(): RedisBatch {
    return new RedisBatch(this, false);
  }

  /** RedisBatch.exec: the commands in one write; the last one's reply settles the batch, within one timeout. */
  sendBatch(commands: readonly BatchCommand[], transaction: boolean): Promise<BatchResults | null> {
    if (!transaction && !commands.length) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      if (!this.writable(reject)) return;
      let text = transaction ? encodeCommand(['MULTI']) : '';
      for (const c of commands) text += encodeCommand(c.args);
      if (transaction) text += encodeCommand(['EXEC']);
      const results: BatchResults = [];
      const queued: ReplyError[] = [];
      // Before EXEC's reply, MULTI's and each command's ('OK', 'QUEUED', or an error that aborts EXEC).
      const collect = (err: Error | undefined, reply: RespReply) => {
        if (transaction) {
          if (err instanceof ReplyError) queued.push(err);
        } else {
          results.push(err ? [err, null] : [null, converted(commands[results.length]!, reply)]);
        }
      };
      const steps = transaction ? commands.length + 1 : commands.length - 1;
      for (let i = 0; i < steps; i++) this.enqueue({ settle: collect, deadline: 0 });
      this.enqueue({
        deadline: performance.now() + this.commandTimeoutMs,
        settle: (err, reply) => {
          if (!transaction) {
            if (err && !(err instanceof ReplyError)) return reject(err);
            collect(err, reply);
            return resolve(results);
          }
          if (err) return reject(queued.length && err instanceof ReplyError ? new ReplyError(`${err.message} (${queued[0]!.message})`) : err);
          if (reply === null) return resolve(null);
          const items = reply as RespReply[];
          resolve(items.map((item, i) => (item instanceof ReplyError ? [item, null] : [null, converted(commands[i]!, item)])));
        },
      });
      this.write(text, steps + 1);
    });
  }

  /** One command, its reply waited for `timeoutMs`. */
  private send(args: readonly RespArg[], timeoutMs: number): Promise<RespReply> {
    return new Promise((resolve, reject) => {
      if (!this.writable(reject)) return;
      this.enqueue({ settle: (err, reply) => (err ? reject(err) : resolve(reply)), deadline: performance.now() + timeoutMs });
      this.write(encodeCommand(args), 1);
    });
  }

  /**
   * Queues `text` (the commands of the last `entries` entries of `pending`) for the socket write at
   * the end of this turn of the event loop. Under load one turn of the loop runs the callbacks of
   * several sockets (requests read, model answers), each of which may commit: their commands leave
   * together, and Redis is woken once for them instead of once each. On a 2-core machine a write
   * that wakes redis-server cost more of the server's CPU than anything else Redis does for a turn
   * (the kernel's wake-up of the other process: ~23 % of a Redis turn's profile, against 8 % for
   * the answer's write on the memory store), and at 16 conversations a write carried ~4 commands
   * (issue 27, docs/performance.md). `setImmediate`, not `process.nextTick`: a tick ends with
   * each callback, so corking per tick sent one command per write and changed nothing (measured).
   * Bounded as the commands are: each is a pending entry (MAX_PENDING_COMMANDS), and none waits
   * past this turn of the loop.
   */
  private write(text: string, entries: number): void {
    this.outbox += text;
    this.unwritten += entries;
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    // A connection destroyed since (its close not yet handled) keeps what was queued: its close fails
    // those commands as unsent (failPending), which they are. Gone already: they failed with it.
    const socket = this.socket;
    if (!socket || socket.destroyed || !this.outbox) return;
    socket.write(this.outbox);
    this.outbox = '';
    this.unwritten = 0;
  };

  /** A reply, and the errors Redis replied: as a caller's command sees them (errors rejected), else passed on for batches. */
  private onReply(reply: RespReply): void {
    const entry = this.pending[this.head];
    if (!entry) {
      // A reply nobody asked for: the connection no longer matches replies to commands.
      this.socket?.destroy(new Error('Redis sent a reply no command was waiting for'));
      return;
    }
    this.pending[this.head++] = undefined as unknown as Pending;
    if (this.head === this.pending.length) {
      this.pending = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
    const settle = entry.settle;
    if (!settle) return; // timed out: its caller was told
    if (reply instanceof ReplyError) settle(reply, null);
    else settle(undefined, reply);
  }

  private writable(reject: (err: Error) => void): boolean {
    if (this.status !== 'ready' || !this.socket) {
      reject(new RedisUnsentError(`Redis connection is not ready (${this.status})`));
      return false;
    }
    if (this.pending.length - this.head >= MAX_PENDING_COMMANDS) {
      reject(new RedisUnsentError(`${MAX_PENDING_COMMANDS} commands already await Redis's replies`));
      return false;
    }
    return true;
  }

  private enqueue(entry: Pending): void {
    this.pending.push(entry);
    if (entry.deadline && entry.deadline < this.timerAt) this.armTimer(entry.deadline);
  }

  private armTimer(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  /** Fails the commands past their deadline (their replies, when they come, are dropped); re-arms for the next. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (let i = this.head; i < this.pending.length; i++) {
      const entry = this.pending[i]!;
      if (!entry.settle || !entry.deadline) continue;
      if (entry.deadline <= now) {
        const settle = entry.settle;
        entry.settle = undefined;
        settle(new RedisTimeoutError('Command timed out'), null);
      } else if (entry.deadline < next) next = entry.deadline;
    }
    if (next < Infinity) this.armTimer(next);
  }

  /** Fails every command awaiting a reply with `err`; those still queued for the socket (never written) as unsent. */
  private failPending(err: Error): void {
    const pending = this.pending;
    const head = this.head;
    const written = pending.length - this.unwritten;
    this.pending = [];
    this.head = 0;
    this.outbox = '';
    this.unwritten = 0;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    const unsent = new RedisUnsentError(`${err.message} before the command was sent`);
    for (let i = head; i < pending.length; i++) pending[i]!.settle?.(i < written ? err : unsent, null);
  }

  /** Makes a connection: TCP (or TLS), then AUTH and SELECT; ready once they are answered. */
  private open(onFirstFailure?: (err: Error) => void): void {
    this.status = 'connecting';
    const socket = this.tls
      ? tlsConnect({ host: this.host, port: this.port, servername: isIP(this.host) ? undefined : this.host })
      : netConnect({ host: this.host, port: this.port });
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    let failure: Error | undefined;
    const connectTimer = setTimeout(
      () => socket.destroy(new Error(`connect ETIMEDOUT: no connection within ${this.options.connectTimeoutMs} ms`)),
      this.options.connectTimeoutMs,
    );
    connectTimer.unref();
    socket.once(this.tls ? 'secureConnect' : 'connect', () => {
      const setup: RespArg[][] = [];
      if (this.auth) setup.push(['AUTH', ...this.auth]);
      if (this.db) setup.push(['SELECT', this.db]);
      if (!setup.length) return this.ready(socket, connectTimer);
      let left = setup.length;
      for (const args of setup) {
        this.enqueue({
          deadline: 0,
          settle: (err) => {
            if (err) return socket.destroy(new Error(`Redis refused ${args[0]}: ${err.message}`));
            if (--left === 0) this.ready(socket, connectTimer);
          },
        });
      }
      socket.write(setup.map(encodeCommand).join(''));
    });
    socket.on('data', (chunk: Buffer) => this.parser.push(chunk));
    socket.on('error', (err) => (failure = err));
    socket.on('close', () => {
      clearTimeout(connectTimer);
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.parser.reset();
      this.failPending(new RedisConnectionError(`Redis connection lost${failure ? `: ${failure.message}` : ''}`));
      if (this.status === 'end') return;
      this.status = 'reconnecting';
      // The first connection's loss fails `connect()` (nothing, once it was ready: its promise resolved).
      onFirstFailure?.(failure ?? new RedisConnectionError('Redis connection closed'));
      onFirstFailure = undefined;
      this.retry = setTimeout(() => this.status !== 'end' && this.open(), this.options.retryDelayMs(++this.attempts));
      this.retry.unref();
    });
  }

  private ready(socket: Socket, connectTimer: NodeJS.Timeout): void {
    clearTimeout(connectTimer);
    if (this.socket !== socket || this.status === 'end') return;
    this.status = 'ready';
    this.attempts = 0;
    for (const listener of [...this.readyListeners]) listener();
  }
}

/** A Lua script and its SHA-1, the name EVALSHA calls it by. */
export class RedisScript {
  readonly sha: string;

  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }
}

/** Whether Redis refused an EVALSHA for not having the script (nothing ran). */
export function isNoScript(err: unknown): boolean {
  return err instanceof ReplyError && err.message.startsWith('NOSCRIPT');
}

function converted(command: BatchCommand, reply: RespReply): unknown {
  return command.convert ? command.convert(reply) : reply;
}

/** HGETALL's flat field, value list as an object (as ioredis gave it). */
function pairsToObject(reply: RespReply): Record<string, string> {
  const flat = (reply ?? []) as string[];
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}
