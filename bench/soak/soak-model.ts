import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { random, SEED } from './soak-config';

/** The model: answers at once mostly, sometimes slowly, with a 500 or a 429 (the servers retry once). */
export async function startModel(): Promise<{ url: string; server: Server; counts: Record<string, number> }> {
  const counts: Record<string, number> = { ok: 0, '500': 0, '429': 0, slow: 0 };
  const chance = random(SEED * 7919);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const roll = chance();
      if (roll < 0.03) {
        counts['500']!++;
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"injected"}}');
        return;
      }
      if (roll < 0.05) {
        counts['429']!++;
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '50' }).end('{"error":{"message":"slow down"}}');
        return;
      }
      const delay = roll < 0.15 ? 100 + Math.floor(chance() * 900) : 0;
      if (delay) counts.slow!++;
      counts.ok!++;
      setTimeout(() => {
        const body = {
          id: 'soak',
          object: 'chat.completion',
          created: 0,
          model: 'soak',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        };
        if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      }, delay);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, counts };
}
