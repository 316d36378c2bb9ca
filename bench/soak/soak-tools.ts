import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * The soak's tools and their side-effect counter. The agent's plugin (written beside its YAML as
 * `custom_plugins.js`) has two tools: `SoakTools-count` runs at once (read_only), `SoakTools-guarded`
 * waits for its owner's approval (requires_hitl). Each call's side effect is a POST to the counter,
 * a server in the soak's own process: what ran is counted outside the replicas, per call id (the
 * model puts the call id in the arguments: a handler is not told its call's id), so a call that ran
 * twice (or ran though rejected) shows whatever the replicas store.
 */
export const TOOLS_PLUGIN = `// The soak's tools (bench/soak/soak-tools.ts): each call counted by the soak's counter, per call id.
async function count(args, ctx) {
  const res = await fetch(process.env.SOAK_COUNTER_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ call: args.call }),
    signal: ctx.signal,
  });
  return 'counted ' + (await res.text());
}
const parameters = { type: 'object', properties: { call: { type: 'string' } }, required: ['call'] };
exports.plugins = [
  {
    name: 'SoakTools',
    description: 'The soak tools',
    tools: [
      // idempotent: false, so the server never repeats a call on its own: one call id, one side effect.
      { name: 'count', description: 'Counts', parameters, risk: 'read_only', idempotent: false, handler: count },
      { name: 'guarded', description: 'Counts, once approved', parameters, risk: 'write_high_risk', requires_hitl: true, idempotent: false, handler: count },
    ],
  },
];
`;

/** Side effects by call id (how many times each call's handler reached the counter). Bounded by the calls the model issued. */
export interface ToolCounter {
  url: string;
  runs: Map<string, number>;
  server: Server;
}

export async function startToolCounter(): Promise<ToolCounter> {
  const runs = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { call } = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { call?: string };
      if (typeof call === 'string') runs.set(call, (runs.get(call) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'text/plain' }).end(String(runs.get(call ?? '') ?? 0));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ran`, runs, server };
}
