import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { random, SEED } from './soak-config';

/** A tool call the model asked for: its tool and the user turn (text) it was asked for. */
export interface IssuedCall {
  id: string;
  tool: string;
  text: string;
}

/** The marker a client puts in a turn's text to have the model call a tool (soak-tools.ts). */
export const TOOL_MARKERS: Record<string, string> = { '[tool:count]': 'SoakTools-count', '[tool:guarded]': 'SoakTools-guarded' };

/** How long the model takes over a turn marked [slow]. */
const SLOW_TURN_MS = 1_500;

/** A turn marked [stream] is answered (when streamed) in STREAM_CHUNKS pieces this far apart: long enough for a client to reattach mid-stream. */
const STREAM_CHUNKS = 6;
const STREAM_GAP_MS = 150;

interface ChatBody {
  messages?: { role: string; content?: unknown }[];
  stream?: boolean;
}

/** An OpenAI streamed answer (chat.completion.chunk events, then [DONE]); `gapMs` between the pieces. */
function streamAnswer(res: ServerResponse, pieces: string[], gapMs: number): void {
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'soak', object: 'chat.completion.chunk', created: 0, model: 'soak', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: '' }, null));
  let i = 0;
  // Bounded by the pieces; stops when the server went away (the run aborted).
  const next = () => {
    if (res.destroyed) return;
    if (i < pieces.length) {
      res.write(chunk({ content: pieces[i++] }, null));
      setTimeout(next, gapMs);
      return;
    }
    res.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
  };
  next();
}

/** The text of a chat message's content (a string, or OpenAI's content parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { text?: string }) => p.text ?? '').join('');
  return '';
}

/**
 * The model: answers at once mostly, sometimes slowly, with a 500 or a 429 (the servers retry once).
 * A user turn whose text has a tool marker gets a tool call (a fresh call id, also its argument:
 * the counter counts by it); the turn after a tool result gets text.
 */
export async function startModel(): Promise<{ url: string; server: Server; counts: Record<string, number>; issued: IssuedCall[] }> {
  const counts: Record<string, number> = { ok: 0, '500': 0, '429': 0, slow: 0, 'tool call': 0 };
  const issued: IssuedCall[] = [];
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
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as ChatBody;
      const last = body.messages?.[body.messages.length - 1];
      const text = last?.role === 'user' ? textOf(last.content) : '';
      // A turn sent to be canceled ([slow]) runs long enough for its cancel to find it running.
      const delay = text.includes('[slow]') ? SLOW_TURN_MS : roll < 0.15 ? 100 + Math.floor(chance() * 900) : 0;
      if (delay) counts.slow!++;
      counts.ok!++;
      const marker = Object.keys(TOOL_MARKERS).find((m) => text.includes(m));
      let message: Record<string, unknown> = { role: 'assistant', content: 'ok' };
      if (marker) {
        const id = `call-${randomUUID()}`;
        issued.push({ id, tool: TOOL_MARKERS[marker]!, text });
        counts['tool call']!++;
        const call = { id, type: 'function', function: { name: TOOL_MARKERS[marker], arguments: JSON.stringify({ call: id }) } };
        message = { role: 'assistant', content: null, tool_calls: [call] };
      }
      if (body.stream === true && !marker) {
        const pieces = text.includes('[stream]') ? Array.from({ length: STREAM_CHUNKS }, (_, i) => `ok${i} `) : ['ok'];
        setTimeout(() => streamAnswer(res, pieces, STREAM_GAP_MS), delay);
        return;
      }
      setTimeout(() => {
        const answer = {
          id: 'soak',
          object: 'chat.completion',
          created: 0,
          model: 'soak',
          choices: [{ index: 0, message, finish_reason: marker ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        };
        if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      }, delay);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, counts, issued };
}
