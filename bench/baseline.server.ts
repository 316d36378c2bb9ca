import { createServer } from 'node:http';

/**
 * The baseline: a bare Node HTTP server doing the same stateful turn as a v3 invoke, with nothing
 * else: a Map of histories, one call to the same model server, the reply appended. No validation,
 * no auth, no telemetry, no store abstraction. Prints its port on stdout.
 *
 * POST /turn {conversation_id?, text} → {conversation_id, output}
 */
const MODEL_URL = process.env.MODEL_URL!;
type Msg = { role: string; content: string };
const histories = new Map<string, Msg[]>();
let nextId = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { conversation_id?: string; text: string };
    const id = body.conversation_id ?? String(++nextId);
    const history = histories.get(id) ?? [{ role: 'system', content: 'You are terse.' }];
    history.push({ role: 'user', content: body.text });
    const r = await fetch(`${MODEL_URL}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'bench', messages: history }),
    });
    const completion = (await r.json()) as { choices: { message: { content: string } }[] };
    const output = completion.choices[0]!.message.content;
    history.push({ role: 'assistant', content: output });
    histories.set(id, history);
    const json = JSON.stringify({ conversation_id: id, output });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(json);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as { port: number }).port}\n`);
});
