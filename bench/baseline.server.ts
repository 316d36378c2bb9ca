import { Agent, createServer, request as httpRequest } from 'node:http';
import { dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { HistoryStore, Msg } from './baseline-stores';

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
const histories = new Map<string, Msg[]>();
let nextId = 0;

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

/**
 * bench/baseline-stores.ts, beside this file. Run from source (the tests) Node strips the types of
 * both and loads them as ES modules, whose imports must name the file's extension; compiled, both
 * are .js. So the module is named by this script's own path and extension.
 */
async function openStore(): Promise<HistoryStore | undefined> {
  const script = process.argv[1]!;
  const stores = (await import(pathToFileURL(join(dirname(script), `baseline-stores${extname(script)}`)).href)) as typeof import('./baseline-stores');
  return stores.openHistoryStore(process.env.BASELINE_STORE ?? 'memory');
}

openStore().then(listen, (err: Error) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
