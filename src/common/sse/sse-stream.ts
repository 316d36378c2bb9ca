import type { Response } from 'express';
import type { Socket } from 'node:net';

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
  'X-Content-Type-Options': 'nosniff',
};

const SSE_HEADER_LIST = Object.entries(SSE_HEADERS);

/** Wire format of one event: optional `id:`, `event:`, and one `data:` line per line of payload. */
export function formatSseEvent(event: string, data: unknown, id?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  let frame = '';
  if (id !== undefined) frame += `id: ${id}\n`;
  frame += `event: ${event}\n`;
  // JSON has no raw line break: one data line, without splitting it.
  if (payload.indexOf('\n') === -1) return `${frame}data: ${payload}\n\n`;
  for (const line of payload.split('\n')) frame += `data: ${line}\n`;
  return frame + '\n';
}

export function formatSseComment(text: string): string {
  return `: ${text}\n\n`;
}

const STREAM_KEY = 'sseStream';

/**
 * One server-sent-event stream over an Express response. It owns the headers, the keepalive
 * comment timer and the abort signal that fires when the client goes away, and registers itself on
 * `res.locals` so the global exception filter can report a late error as an `event: error` frame
 * instead of trying to send a second response.
 *
 * `open()` commits to a 200 at once; `openWithin(ms)` too, its headers waiting up to `ms` to leave
 * with the first frame. `start()` only starts the clock: the headers go out with the
 * first event or the first keepalive, so a failure before that (a model that refuses at once) can
 * still be answered with its real status as problem+json, after `release()`.
 */
export class SseStream {
  private readonly abortController = new AbortController();
  private keepaliveTimer?: NodeJS.Timeout;
  private ended = false;
  /** openWithin() promised a 200 whose headers have not left yet. */
  private committed = false;
  /** The socket this tick's frames are corked on, until the next tick. */
  private corked?: Socket;

  constructor(
    private readonly res: Response,
    private readonly keepaliveMs: number,
  ) {
    res.locals[STREAM_KEY] = this;
    res.on('close', () => {
      this.stopKeepalive();
      if (!this.ended) this.abortController.abort(new Error('client disconnected'));
      this.ended = true;
    });
  }

  static of(res: Response): SseStream | undefined {
    const s = res.locals?.[STREAM_KEY];
    return s instanceof SseStream ? s : undefined;
  }

  /** Aborted when the client disconnects before the stream ended. */
  get signal(): AbortSignal {
    return this.abortController.signal;
  }

  get isOpen(): boolean {
    return !this.ended;
  }

  /** True once the SSE headers (and so the 200) have gone out. */
  get started(): boolean {
    return this.res.headersSent;
  }

  /** Sends the headers now and starts the keepalive. */
  open(): void {
    if (this.res.headersSent) return;
    this.setHead();
    this.res.flushHeaders();
    this.restartKeepalive();
  }

  /**
   * As `open()`, except that the headers wait up to `withinMs` for the first frame and leave with it
   * in one socket write instead of two (and one wake-up of the client instead of two): a fast model's
   * first deltas usually come that soon. After `withinMs` of silence they go alone and the keepalive
   * runs from there, so a client still sees its 200 at once on a model that is slow to start.
   */
  openWithin(withinMs: number): void {
    if (this.res.headersSent || this.ended) return;
    this.committed = true;
    this.stopKeepalive();
    // The keepalive's timer slot: the first frame's open() replaces it with the keepalive itself.
    this.keepaliveTimer = setTimeout(() => this.open(), withinMs);
    this.keepaliveTimer.unref();
  }

  /** Starts the keepalive without sending anything yet (see the class comment). */
  start(): void {
    if (!this.ended) this.restartKeepalive();
  }

  send(event: string, data: unknown, id?: string): void {
    this.write(formatSseEvent(event, data, id));
  }

  /** A frame of `data:` alone, no event name (the OpenAI-compatible stream's wire format: src/api/openai/chunk-stream.util.ts). */
  data(payload: string): void {
    this.write(`data: ${payload}\n\n`);
  }

  comment(text: string): void {
    this.write(formatSseComment(text));
  }

  /**
   * Frames written in one tick leave in one socket write (the socket is corked until the next
   * tick): a model's burst of deltas, or a last delta with the final event, costs one system call,
   * not three per frame (chunked encoding writes a size line, the frame and a line end). The socket
   * itself is corked, not the response: Node's corked response sends its held chunks piece by
   * piece. Nothing waits longer than the current tick.
   */
  private write(frame: string): void {
    if (this.ended) return;
    const socket = this.res.socket;
    if (!this.corked && socket) {
      this.corked = socket;
      socket.cork();
      process.nextTick(() => this.flush());
    }
    // Corked first: the headers of a stream not yet open leave with its first frame.
    if (!this.res.headersSent) this.open();
    this.res.write(frame);
    // Any traffic proves liveness; the keepalive only fills silences.
    this.keepaliveTimer?.refresh();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopKeepalive();
    // A committed stream that sent nothing yet still ends as an (empty) event stream, headers and end in one write.
    if (this.committed && !this.res.headersSent) this.setHead();
    // Ending uncorks the socket fully: what this tick wrote leaves with the last chunk, one write.
    this.res.end();
    this.flush();
  }

  /** Sends what this tick corked (a no-op once the end uncorked the socket). */
  private flush(): void {
    const socket = this.corked;
    this.corked = undefined;
    socket?.uncork();
  }

  /**
   * Gives the response back before anything was sent (stops the keepalive, writes nothing), so the
   * error filter can answer with a plain problem+json. Returns false when the stream had already
   * started, in which case the caller must report the error inside it instead.
   */
  release(): boolean {
    if (this.res.headersSent) return false;
    this.ended = true;
    this.stopKeepalive();
    delete this.res.locals[STREAM_KEY];
    return true;
  }

  /**
   * Writes nothing more and stops the keepalive, without ending the response: after a failure once
   * the stream started, whoever reports it (an error filter) writes the last frame and ends it.
   */
  stop(): void {
    this.ended = true;
    this.stopKeepalive();
    this.flush();
  }

  private setHead(): void {
    this.res.status(200);
    for (const [k, v] of SSE_HEADER_LIST) this.res.setHeader(k, v);
  }

  private restartKeepalive(): void {
    this.stopKeepalive();
    if (this.keepaliveMs <= 0 || this.ended) return;
    this.keepaliveTimer = setInterval(() => this.comment('keepalive'), this.keepaliveMs);
    this.keepaliveTimer.unref();
  }

  private stopKeepalive(): void {
    if (this.keepaliveTimer) clearInterval(this.keepaliveTimer);
    this.keepaliveTimer = undefined;
  }
}
