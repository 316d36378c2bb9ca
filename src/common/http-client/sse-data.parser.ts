/** The longest event (bytes of one `data`, or a line without its end) a stream may send: MAX_ANSWER_BYTES bounds the whole. */
export const MAX_EVENT_BYTES = 8 * 1024 * 1024;

/** An event or a line longer than MAX_EVENT_BYTES. */
export class SseEventTooLongError extends Error {
  override readonly name = 'SseEventTooLongError';
}

/**
 * The `data` of each event of a server-sent event stream, fed text as it arrives (the WHATWG
 * format: `data:` lines joined by newlines, a blank line ends an event; `event:`, `id:`, `retry:`
 * and comments are not used by chat completions and are skipped). `[DONE]` ends the events:
 * whatever follows is ignored. Pure, so the stream reader (http-exchange.ts) only moves bytes.
 */
export class SseDataParser {
  private pending = '';
  private data: string | undefined;
  private finished = false;

  /** True once `[DONE]` came. */
  get done(): boolean {
    return this.finished;
  }

  /**
   * The data of the events `chunk` completes, in order (often none, often several: one read of a
   * socket carries what arrived). Newlines are looked for in the new chunk only: a long line costs
   * its length, not its square.
   */
  push(chunk: string): string[] {
    const out: string[] = [];
    if (this.finished) return out;
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      let line = chunk.slice(start, end);
      start = end + 1;
      if (this.pending) {
        line = this.pending + line;
        this.pending = '';
      }
      if (line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
      if (line === '') {
        if (this.data === undefined) continue;
        if (this.data === '[DONE]') {
          this.finished = true;
          this.data = undefined;
          return out;
        }
        out.push(this.data);
        this.data = undefined;
      } else if (line.startsWith('data:')) {
        const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        this.data = this.data === undefined ? value : `${this.data}\n${value}`;
        if (this.data.length > MAX_EVENT_BYTES) throw new SseEventTooLongError(`An event exceeded ${MAX_EVENT_BYTES} bytes`);
      }
    }
    if (start === chunk.length) return out;
    this.pending += start === 0 ? chunk : chunk.slice(start);
    if (this.pending.length > MAX_EVENT_BYTES) throw new SseEventTooLongError(`A line exceeded ${MAX_EVENT_BYTES} bytes`);
    return out;
  }

  /** At the end of the body: an event the stream ended without its blank line (the SDK's reader delivers it too). */
  end(): string | undefined {
    if (this.finished) return undefined;
    this.pending = '';
    const data = this.data;
    this.data = undefined;
    return data === '[DONE]' ? undefined : data;
  }
}
