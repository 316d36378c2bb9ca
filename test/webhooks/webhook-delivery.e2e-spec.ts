import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { getCACertificates, setDefaultCACertificates, TLSSocket } from 'node:tls';
import { Webhook } from 'standardwebhooks';
import { WebhookSecret } from '../../src/agents/config/webhooks.schema';
import { KeyedSemaphore } from '../../src/common/concurrency/keyed-semaphore.util';
import { deliverWebhookAttempt, WebhookAttempt } from '../../src/tasks/webhooks/webhook-delivery.client';
import { selfSignedCert } from '../support/self-signed-cert';

/**
 * One delivery attempt against real receivers (node:http on 127.0.0.1, hence `allowPrivate: true`
 * where a receiver must be reached): the signature verified by the standardwebhooks package, a
 * redirect not followed, a slow receiver timed out, Retry-After reported, the SSRF guard refusing
 * loopback and metadata addresses, DNS rebinding beaten by the checked address, and over HTTPS
 * the host name (not the address) in SNI and the certificate check.
 */
const SECRET = `whsec_${Buffer.alloc(32, 0x42).toString('base64')}`;

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  url: string;
}

interface Receiver {
  url: string;
  received: Received[];
  close: () => Promise<void>;
}

async function startReceiver(answer: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers, body, url: req.url ?? '' });
      answer(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const body = JSON.stringify({ type: 'request.completed', timestamp: '2026-11-28T04:00:00Z', data: { task_id: 't1', request_id: 'r1' } });
const attempt = (url: string, over: Partial<WebhookAttempt> = {}): WebhookAttempt => ({
  url,
  secret: new WebhookSecret('TEST_WEBHOOK_SECRET', SECRET),
  id: 'msg_2qyqW6Gs',
  body,
  allowPrivate: true,
  ...over,
});

describe('webhook delivery (one attempt, real receivers)', () => {
  const receivers: Receiver[] = [];
  const receiver = async (answer: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(answer);
    receivers.push(r);
    return r;
  };
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  it('POSTs the JSON body signed per Standard Webhooks: the standardwebhooks verifier accepts it', async () => {
    const r = await receiver((_req, res) => res.writeHead(204).end());
    const result = await deliverWebhookAttempt(attempt(`${r.url}/hooks/teal?x=1`));
    expect(result).toMatchObject({ ok: true, status: 204 });
    expect(result.error).toBeUndefined();
    const [got] = r.received;
    expect(got!.url).toBe('/hooks/teal?x=1');
    expect(got!.body).toBe(body);
    expect(got!.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'teal-agent-server (webhooks)',
      'webhook-id': 'msg_2qyqW6Gs',
      host: r.url.slice('http://'.length),
    });
    expect(new Webhook(SECRET).verify(got!.body, got!.headers as Record<string, string>)).toEqual(JSON.parse(body));
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got!.body, got!.headers as Record<string, string>)).toThrow();
  });

  it('does not follow a 302 to another receiver: a failed attempt, and the other receiver hears nothing', async () => {
    const other = await receiver((_req, res) => res.writeHead(200).end());
    const r = await receiver((_req, res) => res.writeHead(302, { location: `${other.url}/stolen` }).end());
    const result = await deliverWebhookAttempt(attempt(r.url));
    expect(result).toMatchObject({ ok: false, status: 302, error: 'redirect not followed (HTTP 302)' });
    expect(r.received).toHaveLength(1);
    expect(other.received).toHaveLength(0);
  });

  it('times out a receiver that does not answer in time', async () => {
    const r = await receiver((_req, res) => setTimeout(() => res.writeHead(200).end(), 2_000).unref());
    const result = await deliverWebhookAttempt(attempt(r.url, { timeoutMs: 200 }));
    expect(result).toMatchObject({ ok: false, error: 'timed out after 200 ms' });
    expect(result.durationMs).toBeLessThan(1_500);
  });

  it('reports a 503 with its Retry-After (seconds and HTTP-date)', async () => {
    const r = await receiver((_req, res) => res.writeHead(503, { 'retry-after': '120' }).end('busy'));
    expect(await deliverWebhookAttempt(attempt(r.url))).toMatchObject({ ok: false, status: 503, error: 'HTTP 503', retryAfterMs: 120_000 });
    const later = new Date(Date.now() + 60_000).toUTCString();
    const d = await receiver((_req, res) => res.writeHead(503, { 'retry-after': later }).end());
    const result = await deliverWebhookAttempt(attempt(d.url));
    expect(result.retryAfterMs).toBeGreaterThan(55_000);
    expect(result.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('reads a large answer only up to its bound, and takes the status', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = 'x'.repeat(64 * 1024);
      // An endless body: the attempt must end on its own bound, not wait for the end.
      const write = () => res.write(chunk) && !res.destroyed && setImmediate(write);
      write();
    });
    const result = await deliverWebhookAttempt(attempt(r.url, { timeoutMs: 5_000 }));
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(result.durationMs).toBeLessThan(4_000);
  });

  it('reports a refused connection as a failed attempt', async () => {
    const r = await receiver((_req, res) => res.end());
    await r.close();
    const result = await deliverWebhookAttempt(attempt(r.url));
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/ECONNREFUSED/);
  });

  describe('the SSRF guard (allowPrivate false)', () => {
    it.each([
      ['127.0.0.1', 'http://127.0.0.1:9/x', '127.0.0.1 is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
      ['169.254.169.254', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254 is refused: link-local (cloud metadata)'],
      ['localhost', 'http://localhost:9/x', /^localhost \((127\.0\.0\.1|::1)\) is refused: loopback/],
    ])('refuses %s, and no request leaves', async (_name, url, error) => {
      const r = await receiver((_req, res) => res.end());
      const result = await deliverWebhookAttempt(attempt(url.replace(':9', `:${new URL(r.url).port}`), { allowPrivate: false }));
      expect(result).toMatchObject({ ok: false, refused: true });
      expect(result.error).toEqual(typeof error === 'string' ? error : expect.stringMatching(error));
      expect(r.received).toHaveLength(0);
    });

    it('refuses a redirect target too: it is never requested, whatever it points at', async () => {
      const r = await receiver((_req, res) => res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data/' }).end());
      expect(await deliverWebhookAttempt(attempt(r.url))).toMatchObject({ ok: false, status: 307, error: 'redirect not followed (HTTP 307)' });
    });
  });

  it('connects to the address the guard checked: a second DNS answer (rebinding) is never asked for', async () => {
    const r = await receiver((_req, res) => res.writeHead(200).end());
    const answers = [[{ address: '127.0.0.1', family: 4 }], [{ address: '169.254.169.254', family: 4 }]];
    const lookup = jest.fn(async () => answers.shift()!);
    const url = `http://rebind.test:${new URL(r.url).port}/hook`;
    const result = await deliverWebhookAttempt(attempt(url, { lookup }));
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(r.received[0]!.headers.host).toBe(`rebind.test:${new URL(r.url).port}`);
  });

  it('holds at most the bound of attempts to one origin at once', async () => {
    let open = 0;
    let most = 0;
    const r = await receiver((_req, res) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        res.writeHead(200).end();
      }, 50);
    });
    const limiter = new KeyedSemaphore(2);
    const results = await Promise.all(Array.from({ length: 6 }, () => deliverWebhookAttempt(attempt(r.url, { limiter }))));
    expect(results.every((x) => x.ok)).toBe(true);
    expect(r.received).toHaveLength(6);
    expect(most).toBe(2);
  });

  describe('over HTTPS, connected to the checked address', () => {
    let cert: { key: string; cert: string };
    const trusted = getCACertificates('default');
    beforeAll(() => {
      cert = selfSignedCert('hooks.test');
      // The attempt trusts what the process trusts: add the test's own CA for this file only.
      setDefaultCACertificates([...trusted, cert.cert]);
    });
    afterAll(() => setDefaultCACertificates(trusted));

    async function httpsReceiver(): Promise<{ port: number; servernames: (string | false | null)[]; close: () => Promise<void> }> {
      const servernames: (string | false | null)[] = [];
      const server = createHttpsServer(cert, (req, res) => {
        servernames.push((req.socket as TLSSocket).servername);
        req.resume();
        req.on('end', () => res.writeHead(200).end());
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const close = () => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      };
      return { port: (server.address() as AddressInfo).port, servernames, close };
    }

    it('sends the host name as SNI and checks the certificate against it', async () => {
      const r = await httpsReceiver();
      try {
        const lookup = async () => [{ address: '127.0.0.1', family: 4 }];
        expect(await deliverWebhookAttempt(attempt(`https://hooks.test:${r.port}/hook`, { lookup }))).toMatchObject({ ok: true, status: 200 });
        expect(r.servernames).toEqual(['hooks.test']);
        // The same address under a name the certificate does not hold: refused by TLS, not delivered.
        const other = await deliverWebhookAttempt(attempt(`https://other.test:${r.port}/hook`, { lookup }));
        expect(other).toMatchObject({ ok: false, error: expect.stringMatching(/ERR_TLS_CERT_ALTNAME_INVALID/) });
      } finally {
        await r.close();
      }
    });
  });
});
