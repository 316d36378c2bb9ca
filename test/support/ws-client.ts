import type { IncomingHttpHeaders } from 'node:http';
import { WebSocket } from 'ws';

/** Everything a `/stream` socket delivered, in order, and how it ended. */
export interface SocketTranscript {
  /** The 101 answer's headers. */
  headers: IncomingHttpHeaders;
  /** Each received message as text, in order. */
  frames: string[];
  /** Whether each received message was a binary frame. */
  binary: boolean[];
  /** The close code and reason the server sent. */
  code: number;
  reason: string;
  /** Pings received (keepalive; never messages). */
  pings: number;
}

/** The answer to an upgrade the server refused (no socket). */
export interface RefusedUpgrade {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** `http://host` → `ws://host`. */
export const wsUrl = (httpUrl: string) => httpUrl.replace(/^http/, 'ws');

/**
 * Opens a real WebSocket (the `ws` client, so request headers such as Authorization can be set, as
 * the Assistant Orchestrator's python `websockets` does), sends `message` once open (a string as a
 * text frame, a Buffer as a binary one) and collects everything until the server closes. Rejects
 * when the server refuses the upgrade: use `refusedUpgrade` for those.
 */
export function streamSocket(
  url: string,
  message: string | Buffer | undefined,
  options: {
    headers?: Record<string, string>;
    onFrame?: (frame: string, ws: WebSocket) => void;
    /** Called once the socket is open (after `message`, if any, is sent): to send late, or close. */
    onOpen?: (ws: WebSocket) => void;
    /** false: never answer pings, as a peer that vanished without closing its connection. */
    autoPong?: boolean;
  } = {},
): Promise<SocketTranscript> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: options.headers, autoPong: options.autoPong ?? true });
    const out: SocketTranscript = { headers: {}, frames: [], binary: [], code: 0, reason: '', pings: 0 };
    ws.on('upgrade', (res) => (out.headers = res.headers));
    ws.on('ping', () => out.pings++);
    ws.on('open', () => {
      if (message !== undefined) ws.send(message, { binary: Buffer.isBuffer(message) });
      options.onOpen?.(ws);
    });
    ws.on('message', (data, isBinary) => {
      const frame = (data as Buffer).toString('utf8');
      out.frames.push(frame);
      out.binary.push(isBinary);
      options.onFrame?.(frame, ws);
    });
    ws.on('unexpected-response', (req, res) => {
      req.destroy();
      reject(new Error(`upgrade refused: ${res.statusCode}`));
    });
    ws.on('error', reject);
    ws.on('close', (code, reason) => resolve({ ...out, code, reason: reason.toString('utf8') }));
  });
}

/** Attempts an upgrade that the server is expected to refuse, and returns its HTTP answer. */
export function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<RefusedUpgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => {
      ws.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    ws.on('error', (err) => {
      // `ws` reports a refused upgrade as an error too when the socket closes; the answer wins.
      if (!/Unexpected server response/.test(err.message)) reject(err);
    });
  });
}
