import type { Response } from 'express';
import { SseStream } from '../../common/sse/sse-stream';
import type { StreamData } from './completion-chunks.util';

/**
 * A chat-completion stream over an Express response, in OpenAI's wire format: `data: {json}` frames
 * with no event names, `data: [DONE]` after a complete answer, `: keepalive` comments in the
 * silences. The headers go out with the first frame, so a failure before it (a model that refuses
 * at once, a task another user owns) is still answered with its own status. `signal` aborts when
 * the client goes away. The headers, keepalive and signal are the one SseStream's.
 */
export class ChunkStream {
  private readonly sse: SseStream;

  constructor(res: Response, keepaliveMs: number) {
    this.sse = new SseStream(res, keepaliveMs);
  }

  get signal(): AbortSignal {
    return this.sse.signal;
  }

  /** Whether anything was sent (the 200 is committed). */
  get started(): boolean {
    return this.sse.started;
  }

  /** Starts the keepalive clock without sending anything: a silence longer than it commits the 200. */
  start(): void {
    this.sse.start();
  }

  send(data: StreamData): void {
    this.sse.data(JSON.stringify(data));
  }

  /** Ends a complete answer with OpenAI's `[DONE]` sentinel. */
  done(): void {
    this.sse.data('[DONE]');
    this.sse.end();
  }

  end(): void {
    this.sse.end();
  }

  /**
   * Stops the keepalive and writes nothing more, leaving the response to the error filter: its
   * status and JSON body when nothing was sent yet, else a last `data: {"error": ...}` chunk.
   */
  release(): void {
    if (!this.sse.release()) this.sse.stop();
  }
}
