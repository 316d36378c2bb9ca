import type { Response } from 'express';
import { SSE_HEADERS } from '../../common/sse/sse-stream';
import type { StreamData } from './completion-chunks.util';

/**
 * A chat-completion stream over an Express response, in OpenAI's wire format: `data: {json}` frames
 * with no event names, `data: [DONE]` after a complete answer, `: keepalive` comments in the
 * silences. The headers go out with the first frame, so a failure before it (a model that refuses
 * at once, a task another user owns) is still answered with its own status. `signal` aborts when
 * the client goes away.
 */
export class ChunkStream {
  private readonly abortController = new AbortController();
  private keepalive?: NodeJS.Timeout;
  private ended = false;

  constructor(
    private readonly res: Response,
    private readonly keepaliveMs: number,
  ) {
    res.on('close', () => {
      this.stopKeepalive();
      if (!this.ended) this.abortController.abort(new Error('client disconnected'));
      this.ended = true;
    });
  }

  get signal(): AbortSignal {
    return this.abortController.signal;
  }

  /** Whether anything was sent (the 200 is committed). */
  get started(): boolean {
    return this.res.headersSent;
  }

  /** Starts the keepalive clock without sending anything: a silence longer than it commits the 200. */
  start(): void {
    if (!this.ended) this.restartKeepalive();
  }

  send(data: StreamData): void {
    this.write(`data: ${JSON.stringify(data)}\n\n`);
  }

  /** Ends a complete answer with OpenAI's `[DONE]` sentinel. */
  done(): void {
    this.write('data: [DONE]\n\n');
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopKeepalive();
    this.res.end();
  }

  /**
   * Stops the keepalive and writes nothing more, leaving the response to the error filter: its
   * status and JSON body when nothing was sent yet, else a last `data: {"error": ...}` chunk.
   */
  release(): void {
    this.ended = true;
    this.stopKeepalive();
  }

  private write(frame: string): void {
    if (this.ended) return;
    if (!this.res.headersSent) {
      this.res.status(200);
      for (const [k, v] of Object.entries(SSE_HEADERS)) this.res.setHeader(k, v);
    }
    this.res.write(frame);
    this.restartKeepalive();
  }

  private restartKeepalive(): void {
    this.stopKeepalive();
    if (this.keepaliveMs <= 0) return;
    this.keepalive = setInterval(() => this.write(': keepalive\n\n'), this.keepaliveMs);
    this.keepalive.unref();
  }

  private stopKeepalive(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = undefined;
  }
}
