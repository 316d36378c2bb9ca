import { createServer } from 'node:http';

/**
 * An OpenAI-compatible chat-completions server that answers at once with a fixed short reply, so
 * the benchmark measures the servers under test, not a model. Run as its own process; prints its
 * port on stdout.
 *
 * A request with `stream: true` is answered as OpenAI streams: server-sent events, each
 * `data: {chat.completion.chunk}`: a role delta, STREAM_PARTS as content deltas (one each), a
 * chunk with the finish_reason, with `stream_options.include_usage` one more with the usage and no
 * choices, then `data: [DONE]`.
 */
const REPLY = 'ok';
/** The streamed reply, in its content deltas. */
const STREAM_PARTS = ['o', 'k', '.'];
let n = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as {
      messages?: unknown[];
      stream?: boolean;
      stream_options?: { include_usage?: boolean };
    };
    const promptTokens = body.messages?.length ?? 0;
    const id = `chatcmpl-${++n}`;
    const created = Math.floor(Date.now() / 1000);
    if (body.stream) {
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: 'bench', choices, ...extra })}\n\n`;
      let sse = chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
      for (const part of STREAM_PARTS) sse += chunk([{ index: 0, delta: { content: part }, finish_reason: null }]);
      sse += chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]);
      if (body.stream_options?.include_usage)
        sse += chunk([], { usage: { prompt_tokens: promptTokens, completion_tokens: STREAM_PARTS.length, total_tokens: promptTokens + STREAM_PARTS.length } });
      sse += 'data: [DONE]\n\n';
      // One write, as an instant model would: the client still reads it as a stream of frames.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }); // chunked, as OpenAI's
      res.end(sse);
      return;
    }
    const json = JSON.stringify({
      id,
      object: 'chat.completion',
      created,
      model: 'bench',
      choices: [{ index: 0, message: { role: 'assistant', content: REPLY }, finish_reason: 'stop' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: 1, total_tokens: promptTokens + 1 },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
    res.end(json);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${(server.address() as { port: number }).port}\n`);
});
