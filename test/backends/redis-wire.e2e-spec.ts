import Redis from 'ioredis';
import { AddressInfo, connect as netConnect, createServer as createNetServer, Socket } from 'node:net';
import { createServer as createTlsServer, getCACertificates, setDefaultCACertificates, Server as TlsServer } from 'node:tls';
import {
  MAX_PENDING_COMMANDS,
  RedisConnectionError,
  RedisScript,
  RedisTimeoutError,
  RedisUnsentError,
  RedisWire,
  ReplyError,
  RespReply,
} from '../../src/state/backends/redis/redis-wire';
import { waitFor } from '../support/faults';
import { selfSignedCert } from '../support/self-signed-cert';
import { startTcpProxy } from '../support/tcp-proxy';
import { RedisServerHandle, startRedisServer, uniqueName } from '../support/services';

const options = { connectTimeoutMs: 1000, commandTimeoutMs: 1000, retryDelayMs: () => 50 };

/** The store's own Redis client (src/state/backends/redis/redis-wire.ts) against a real redis-server, ioredis as the independent check. */
describe('RedisWire on a real Redis', () => {
  let server: RedisServerHandle;
  let check: Redis;
  const wires: RedisWire[] = [];
  const wire = async (url = server.url, opts = options) => {
    const w = new RedisWire(url, opts);
    wires.push(w);
    await w.connect();
    return w;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    check = new Redis(server.url);
  });
  afterEach(() => {
    for (const w of wires.splice(0)) w.disconnect();
  });
  afterAll(async () => {
    check.disconnect();
    await server.stop();
  });

  it('writes and reads what ioredis reads and writes: UTF-8, CR LF inside values, numbers, nil, a 5 MiB value', async () => {
    const w = await wire();
    const key = uniqueName('k');
    const text = 'héllo → 😀\r\nnext line';
    expect(await w.call('SET', key, text)).toBe('OK');
    expect(await check.get(key)).toBe(text);
    await check.hset(`${key}:h`, 'f', 'vé');
    expect(await w.hget(`${key}:h`, 'f')).toBe('vé');
    expect(await w.hget(`${key}:h`, 'missing')).toBeNull();
    expect(await w.call('INCRBY', `${key}:n`, 41)).toBe(41);
    const big = 'y'.repeat(5 * 1024 * 1024 - 3) + 'ü';
    expect(await w.call('SET', `${key}:big`, big)).toBe('OK');
    expect(await check.strlen(`${key}:big`)).toBe(Buffer.byteLength(big));
    expect(await w.get(`${key}:big`)).toBe(big);
    const [seconds, micros] = await w.time();
    expect(Math.abs(Number(seconds) * 1000 + Number(micros) / 1000 - Date.now())).toBeLessThan(5000);
    expect(await w.ping()).toBe('PONG');
  });

  it('matches replies to commands in order with many in flight', async () => {
    const w = await wire();
    const key = uniqueName('order');
    const replies = await Promise.all(Array.from({ length: 500 }, (_, i) => w.call('ECHO', `${key}-${i}`)));
    expect(replies).toEqual(Array.from({ length: 500 }, (_, i) => `${key}-${i}`));
  });

  it('rejects a command Redis refuses with its ReplyError, and goes on', async () => {
    const w = await wire();
    const key = uniqueName('wrongtype');
    await check.set(key, 'x');
    const err = await w.call('HGET', key, 'f').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplyError);
    expect((err as Error).message).toMatch(/^WRONGTYPE/);
    expect(await w.get(key)).toBe('x');
  });

  it('runs a script by its SHA-1, sending it whole once when Redis does not have it (NOSCRIPT)', async () => {
    const w = await wire();
    const script = new RedisScript(`return {KEYS[1], ARGV[1], ${Date.now()}}`);
    await check.script('FLUSH');
    const first = (await w.runScript(script, 1, 'a', 'b')) as unknown[];
    expect(first.slice(0, 2)).toEqual(['a', 'b']);
    expect(await check.script('EXISTS', script.sha)).toEqual([1]); // EVAL cached it
    expect(((await w.call('EVALSHA', script.sha, 1, 'c', 'd')) as unknown[]).slice(0, 2)).toEqual(['c', 'd']);
    const missing = await w.call('EVALSHA', '0'.repeat(40), 0).catch((e: unknown) => e);
    expect((missing as Error).message).toMatch(/^NOSCRIPT/);
  });

  it('a script sent whole after NOSCRIPT waits for its reply as long as its caller set when calling', async () => {
    const w = await wire();
    // Runs ~300 ms: longer than the timeout put back, shorter than the one the call was made with.
    const slow = new RedisScript(
      `local s = redis.call('TIME'); repeat local n = redis.call('TIME') until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > 300000; return 'done'`,
    );
    await check.script('FLUSH');
    w.commandTimeoutMs = 3000;
    const reply = w.runScript(slow, 0);
    w.commandTimeoutMs = 100; // put back at once, as the store does around a commit (its `sent`)
    expect(await reply).toBe('done');
    expect(await check.script('EXISTS', slow.sha)).toEqual([1]); // it went as EVAL
  });

  it('MULTI … EXEC: replies per command, errors inline; an aborted transaction is null; a refused one rejects', async () => {
    const w = await wire();
    const key = uniqueName('multi');
    await check.hset(key, { a: '1', b: '2' });
    await check.rpush(`${key}:l`, 'x', 'y');
    await check.set(`${key}:s`, 'str');
    const results = await w.multi().hget(key, 'a').hgetall(key).lrange(`${key}:l`, 0, -1).exists(`${key}:none`).hget(`${key}:s`, 'f').exec();
    expect(results!.slice(0, 4)).toEqual([
      [null, '1'],
      [null, { a: '1', b: '2' }],
      [null, ['x', 'y']],
      [null, 0],
    ]);
    expect(results![4]![0]).toBeInstanceOf(ReplyError);
    expect((results![4]![0] as Error).message).toMatch(/^WRONGTYPE/);

    // A WATCHed key changed by another client: EXEC answers nil, the transaction did not run.
    await w.call('WATCH', key);
    await check.hset(key, 'a', 'changed');
    expect(await w.multi().hget(key, 'a').exec()).toBeNull();

    // A command refused while queued: EXEC is refused (EXECABORT), nothing ran.
    const refused = await w.sendBatch([{ args: ['HGET', key] }], true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ReplyError);
    expect((refused as Error).message).toMatch(/^EXECABORT.*wrong number of arguments/);
    expect(await w.ping()).toBe('PONG');
  });

  it('a pipeline: each command on its own, in one write', async () => {
    const w = await wire();
    const key = uniqueName('pipe');
    await check.set(key, 'v');
    expect(await w.pipeline().exists(key).exists(`${key}:none`).hget(key, 'f').exec()).toEqual([
      [null, 1],
      [null, 0],
      [expect.any(ReplyError), null],
    ]);
    expect(await w.pipeline().exec()).toEqual([]);
  });

  it('the commands of one turn of the event loop leave in one socket write; a later turn, another', async () => {
    const w = await wire();
    const key = uniqueName('turn');
    const writes = jest.spyOn((w as unknown as { socket: Socket }).socket, 'write');
    const script = new RedisScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`);
    await w.runScript(script, 1, `${key}:warm`, 0); // EVALSHA, then EVAL: Redis now has it
    writes.mockClear();
    const replies = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => w.call('ECHO', `${key}-${i}`)),
      w.runScript(script, 1, key, 5),
      w.pipeline().exists(key).hget(`${key}:h`, 'f').exec(),
      w.multi().exists(key).exec(),
    ]);
    expect(replies).toEqual([
      ...Array.from({ length: 20 }, (_, i) => `${key}-${i}`),
      5,
      [
        [null, 1],
        [null, null],
      ],
      [[null, 1]],
    ]);
    expect(writes).toHaveBeenCalledTimes(1);
    // From separate callbacks of one turn (as several sockets' callbacks under load): one write too.
    const fromTwo = await new Promise<Promise<RespReply>[]>((resolve) => {
      const sent: Promise<RespReply>[] = [];
      setImmediate(() => sent.push(w.call('ECHO', 'one')));
      setImmediate(() => resolve([...sent, w.call('ECHO', 'two')]));
    });
    expect(await Promise.all(fromTwo)).toEqual(['one', 'two']);
    expect(writes).toHaveBeenCalledTimes(2);
    expect(await w.call('ECHO', 'a')).toBe('a');
    expect(await w.call('ECHO', 'b')).toBe('b');
    expect(writes).toHaveBeenCalledTimes(4);
  });

  it('commands still waiting for their write when the connection goes fail unsent, and Redis ran none of them', async () => {
    const w = await wire();
    const key = uniqueName('unsent');
    const calls = [w.call('INCR', key), w.pipeline().exists(key).exec(), w.call('INCR', key)].map((p) => p.catch((e: unknown) => e));
    // Destroyed in the same turn as the calls, before their write: as when Redis's end of the socket goes.
    (w as unknown as { socket: Socket }).socket.destroy();
    for (const err of await Promise.all(calls)) expect(err).toBeInstanceOf(RedisUnsentError);
    expect(await check.get(key)).toBeNull();
    // It reconnects, and what is sent then runs once.
    await waitFor(() => w.call('INCR', key));
    expect(await check.get(key)).toBe('1');
  });

  it('a reply that does not come within the timeout fails its command; the late reply is dropped, the next command gets its own', async () => {
    const w = await wire(server.url, { ...options, commandTimeoutMs: 300 });
    const key = uniqueName('late');
    await check.set(key, 'mine');
    await check.call('CLIENT', 'PAUSE', '1200', 'ALL');
    const started = Date.now();
    const late = await w.call('ECHO', 'late').catch((e: unknown) => e);
    expect(late).toBeInstanceOf(RedisTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(1000);
    // Sent while paused too, with a longer timeout (the store's bulk calls): answered once Redis resumes, after the dropped reply.
    w.commandTimeoutMs = 5000;
    expect(await w.get(key)).toBe('mine');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it(`refuses at once, unsent, beyond ${MAX_PENDING_COMMANDS} commands awaiting replies`, async () => {
    const w = await wire(server.url, { ...options, commandTimeoutMs: 5000 });
    await check.call('CLIENT', 'PAUSE', '1000', 'ALL');
    const waiting = Array.from({ length: MAX_PENDING_COMMANDS }, () => w.ping());
    await expect(w.ping()).rejects.toBeInstanceOf(RedisUnsentError);
    expect(new Set(await Promise.all(waiting))).toEqual(new Set(['PONG']));
    expect(await w.ping()).toBe('PONG');
  });

  it('AUTH with a password, or a user and password, and SELECT of the URL database, on every connection', async () => {
    const user = uniqueName('user').replace(/[^a-z0-9]/gi, '');
    await check.call('ACL', 'SETUSER', user, 'on', '>s3cret:@/', '~*', '+@all');
    const named = await wire(`redis://${user}:${encodeURIComponent('s3cret:@/')}@127.0.0.1:${server.port}/3`);
    expect(await named.call('ACL', 'WHOAMI')).toBe(user);
    const key = uniqueName('db3');
    await named.call('SET', key, 'in three');
    const db3 = new Redis(`${server.url}/3`);
    try {
      expect(await db3.get(key)).toBe('in three');
      expect(await check.get(key)).toBeNull();
    } finally {
      db3.disconnect();
    }
    // A refused password: the connection is never ready, and the first connect says why.
    const refused = new RedisWire(`redis://${user}:wrong@127.0.0.1:${server.port}`, options);
    wires.push(refused);
    await expect(refused.connect()).rejects.toThrow(/Redis refused AUTH: WRONGPASS/);
    await expect(refused.ping()).rejects.toBeInstanceOf(RedisUnsentError);
  });

  it('a lost connection fails the commands awaiting replies; calls meanwhile are unsent; it reconnects when Redis is back, ready again', async () => {
    const proxy = await startTcpProxy(server.port);
    try {
      const w = await wire(`redis://127.0.0.1:${proxy.port}`);
      let readies = 0;
      w.onReady(() => readies++);
      proxy.hold();
      const inFlight = w.call('ECHO', 'lost').catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 50));
      await proxy.down();
      expect(await inFlight).toBeInstanceOf(RedisConnectionError);
      await expect(w.ping()).rejects.toBeInstanceOf(RedisUnsentError);
      expect(w.status).toBe('reconnecting');
      proxy.release();
      await proxy.up();
      await waitFor(() => w.ping());
      expect(readies).toBe(1);
      expect(w.status).toBe('ready');
      w.disconnect();
      expect(w.status).toBe('end');
      await expect(w.ping()).rejects.toBeInstanceOf(RedisUnsentError);
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it('drops a connection that does not speak RESP (or answers what was not asked), fails what awaited it, and connects again', async () => {
    // A server that answers the first command with garbage, the second connection's with an extra reply, then properly.
    let connections = 0;
    const fake = createNetServer((socket) => {
      const n = ++connections;
      socket.on('data', () => socket.write(n === 1 ? '?what\r\n' : n === 2 ? '+PONG\r\n+EXTRA\r\n' : '+PONG\r\n'));
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const w = await wire(`redis://127.0.0.1:${(fake.address() as AddressInfo).port}`);
      const garbled = await w.ping().catch((e: unknown) => e);
      expect(garbled).toBeInstanceOf(RedisConnectionError);
      expect((garbled as Error).message).toMatch(/unknown reply type 0x3f/);
      await waitFor(async () => expect(w.status).toBe('ready'));
      expect(await w.ping()).toBe('PONG'); // the second connection: its extra reply drops it
      await waitFor(async () => expect(connections).toBe(3));
      await waitFor(() => w.ping());
      expect(await w.ping()).toBe('PONG');
    } finally {
      for (const w of wires.splice(0)) w.disconnect(); // the server's close waits for its connections
      await new Promise((resolve) => fake.close(resolve));
    }
  });

  describe('rediss:// (TLS)', () => {
    let proxy: TlsServer;
    let cert: { key: string; cert: string };
    const defaults = getCACertificates('default');

    beforeAll(async () => {
      cert = selfSignedCert('localhost');
      // TLS in front of the plain redis-server, as a managed Redis terminates it.
      proxy = createTlsServer({ key: cert.key, cert: cert.cert }, (client) => {
        const upstream = netConnect(server.port, '127.0.0.1');
        client.pipe(upstream).pipe(client);
        client.on('error', () => upstream.destroy());
        upstream.on('error', () => client.destroy());
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      setDefaultCACertificates(defaults);
      await new Promise((resolve) => proxy.close(resolve));
    });

    it('checks the certificate against the trusted CAs and the host name, then speaks RESP inside TLS', async () => {
      const url = `rediss://localhost:${(proxy.address() as AddressInfo).port}`;
      const untrusted = new RedisWire(url, options);
      wires.push(untrusted);
      await expect(untrusted.connect()).rejects.toThrow(/self-signed|certificate/i);
      untrusted.disconnect();

      setDefaultCACertificates([...defaults, cert.cert]); // as NODE_EXTRA_CA_CERTS would
      const w = await wire(url);
      const key = uniqueName('tls');
      await w.call('SET', key, 'over TLS');
      expect(await check.get(key)).toBe('over TLS');
    });
  });
});
