import type { IncomingHttpHeaders } from 'node:http';

/** The head of an answer: its status, headers (names lower-cased) and whether the connection may serve another call. */
export interface ResponseHead {
  status: number;
  /** Made from the header lines when first read (a 2xx answer's seldom are). */
  readonly headers: IncomingHttpHeaders;
  /** HTTP/1.1 without `Connection: close` (1.0 only with `Connection: keep-alive`), and a body whose end is known. */
  keepAlive: boolean;
}

export interface ResponseSink {
  head(head: ResponseHead): void;
  body(chunk: Buffer): void;
  end(): void;
}

/** The answer is not HTTP/1.x as a server writes it: the call fails and its connection is dropped. */
export class Http1ParseError extends Error {
  override readonly name = 'Http1ParseError';
}

/** A head larger than this (status line, headers, trailers) is refused, as Node's own client does (--max-http-header-size). */
export const MAX_HEAD_BYTES = 16 * 1024;
/** A chunk-size line longer than this is refused (a size and its extensions fit in far less). */
const MAX_CHUNK_LINE_BYTES = 1024;

const CRLFCRLF = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;
/** A header name as HTTP allows it (RFC 9110 token): what a request may send and an answer may carry. */
export const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const DECIMAL = /^\d+$/;
const HEX = /^[0-9A-Fa-f]+$/;

const enum State {
  Head,
  Length,
  ChunkLine,
  ChunkData,
  ChunkEnd,
  Trailers,
  UntilClose,
  Done,
}

/**
 * Reads one HTTP/1.x response from the bytes of a connection, as they come (the model client's
 * own, in place of Node's ClientRequest and IncomingMessage: issue 27). Interim 1xx answers are
 * skipped; the body is framed by Content-Length, by chunked Transfer-Encoding (extensions and
 * trailers read and dropped) or by the connection's end; 204 and 304 have none. Pure: bytes in,
 * calls to the sink out; `Http1ParseError` for anything malformed, heads beyond MAX_HEAD_BYTES
 * included. Bytes after the response (nothing is pipelined) mark the connection as not reusable.
 */
export class Http1ResponseParser {
  private state = State.Head;
  /** Bytes of the head, a chunk-size line or the trailers not yet complete. */
  private pending: Buffer | undefined;
  private remaining = 0;
  private keepAlive = false;
  /** Bytes came after the end of the response: the connection cannot serve another call. */
  private surplus = false;

  constructor(private readonly sink: ResponseSink) {}

  /** The whole response has been read. */
  get done(): boolean {
    return this.state === State.Done;
  }

  /** The head has been read (an answer has begun). */
  get started(): boolean {
    return this.state !== State.Head;
  }

  /** Done, and the connection may serve another call. */
  get reusable(): boolean {
    return this.state === State.Done && this.keepAlive && !this.surplus;
  }

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      switch (this.state) {
        case State.Head:
        case State.Trailers:
          at = this.readHead(chunk, at);
          break;
        case State.Length:
          at += this.take(chunk, at);
          if (this.remaining === 0) this.finish();
          break;
        case State.ChunkLine:
          at = this.readChunkLine(chunk, at);
          break;
        case State.ChunkData:
          at += this.take(chunk, at);
          if (this.remaining === 0) {
            this.state = State.ChunkEnd;
            this.remaining = 2;
          }
          break;
        case State.ChunkEnd:
          // The CRLF after a chunk's data, possibly split across reads.
          if (chunk[at] !== CRLF[2 - this.remaining]) throw new Http1ParseError('a chunk did not end with CRLF');
          at++;
          if (--this.remaining === 0) this.state = State.ChunkLine;
          break;
        case State.UntilClose:
          this.sink.body(at === 0 ? chunk : chunk.subarray(at));
          at = chunk.length;
          break;
        case State.Done:
          this.surplus = true;
          return;
      }
    }
  }

  /**
   * The connection ended. A body read to the connection's end is then whole; anything else not yet
   * done was cut short: false (the caller fails the call).
   */
  end(): boolean {
    if (this.state === State.UntilClose) this.finish();
    return this.state === State.Done;
  }

  /** Hands the sink the body's bytes from `at`, at most `remaining` of them; returns how many. */
  private take(chunk: Buffer, at: number): number {
    const n = Math.min(this.remaining, chunk.length - at);
    this.remaining -= n;
    this.sink.body(at === 0 && n === chunk.length ? chunk : chunk.subarray(at, at + n));
    return n;
  }

  private finish(): void {
    this.state = State.Done;
    this.pending = undefined;
    this.sink.end();
  }

  /** Reads up to the blank line that ends a head (or the trailers); returns where reading stopped. */
  private readHead(chunk: Buffer, at: number): number {
    const before = this.pending?.length ?? 0;
    const bytes = before ? Buffer.concat([this.pending!, chunk.subarray(at)]) : chunk.subarray(at);
    // The blank line may straddle the join: search from a little before it.
    const end = bytes.indexOf(CRLFCRLF, Math.max(0, before - 3));
    // Trailers after an empty last chunk may be nothing at all: just the CRLF.
    if (this.state === State.Trailers && bytes.length >= 2 && bytes[0] === 0x0d && bytes[1] === 0x0a) {
      this.finish();
      return at + 2 - before;
    }
    if (end < 0) {
      if (bytes.length > MAX_HEAD_BYTES) throw new Http1ParseError(`the answer's head exceeded ${MAX_HEAD_BYTES} bytes`);
      this.pending = Buffer.from(bytes);
      return chunk.length;
    }
    if (end > MAX_HEAD_BYTES) throw new Http1ParseError(`the answer's head exceeded ${MAX_HEAD_BYTES} bytes`);
    this.pending = undefined;
    const consumed = at + end + 4 - before;
    if (this.state === State.Trailers) this.finish();
    else this.onHead(bytes.toString('latin1', 0, end));
    return consumed;
  }

  private onHead(text: string): void {
    const lines = text.split('\r\n');
    const status = STATUS_LINE.exec(lines[0]!);
    if (!status) throw new Http1ParseError(`not an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 64))}`);
    const code = Number(status[2]);
    // Every line is checked now; of the values only the three that frame the body are read here,
    // the headers object is built when something asks for it (a 2xx answer's seldom is).
    let connection: string | undefined;
    let te: string | undefined;
    let length: string | undefined;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0 || !HTTP_TOKEN.test(line.slice(0, colon))) throw new Http1ParseError(`a malformed header line: ${JSON.stringify(line.slice(0, 64))}`);
      if (colon !== 10 && colon !== 14 && colon !== 17) continue;
      const key = line.slice(0, colon).toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (key === 'connection') connection = connection === undefined ? value : `${connection}, ${value}`;
      else if (key === 'content-length') length = length === undefined ? value : `${length}, ${value}`;
      else if (key === 'transfer-encoding') te = te === undefined ? value : `${te}, ${value}`;
    }
    // An interim answer (100 Continue, 103 Early Hints): the real one follows.
    if (code >= 100 && code < 200) {
      if (code === 101) throw new Http1ParseError('the server switched protocols');
      return;
    }
    const said = (connection ?? '').toLowerCase();
    this.keepAlive = status[1] === '1' ? !/\bclose\b/.test(said) : /\bkeep-alive\b/.test(said);
    if (code === 204 || code === 304) {
      this.sink.head(new ParsedHead(code, this.keepAlive, lines));
      this.finish();
      return;
    }
    if (te !== undefined) {
      // Chunked must come last; any other coding is read to the connection's end. A length beside
      // it is ignored (RFC 9112 §6.3) and the connection not reused.
      const chunked = /(?:^|,)\s*chunked\s*$/i.test(te);
      if (!chunked || length !== undefined) this.keepAlive = false;
      this.state = chunked ? State.ChunkLine : State.UntilClose;
    } else if (length !== undefined) {
      // Repeated identical values ("5, 5") are one length (a single one, nearly always, is taken as it is).
      const only = DECIMAL.test(length) ? length : oneLength(length);
      if (!DECIMAL.test(only) || !Number.isSafeInteger(Number(only))) throw new Http1ParseError(`an invalid content-length: ${JSON.stringify(length)}`);
      this.remaining = Number(only);
      this.state = State.Length;
    } else {
      this.keepAlive = false;
      this.state = State.UntilClose;
    }
    this.sink.head(new ParsedHead(code, this.keepAlive, lines));
    if (this.state === State.Length && this.remaining === 0) this.finish();
  }

  /** Reads a chunk-size line (size in hex, extensions after `;` dropped). */
  private readChunkLine(chunk: Buffer, at: number): number {
    const before = this.pending?.length ?? 0;
    const bytes = before ? Buffer.concat([this.pending!, chunk.subarray(at)]) : chunk.subarray(at);
    const end = bytes.indexOf(CRLF, Math.max(0, before - 1));
    if (end < 0) {
      if (bytes.length > MAX_CHUNK_LINE_BYTES) throw new Http1ParseError('a chunk-size line too long');
      this.pending = Buffer.from(bytes);
      return chunk.length;
    }
    this.pending = undefined;
    const line = bytes.toString('latin1', 0, end);
    const semi = line.indexOf(';');
    const size = (semi < 0 ? line : line.slice(0, semi)).trim();
    if (!HEX.test(size) || size.length > 12) throw new Http1ParseError(`an invalid chunk size: ${JSON.stringify(line.slice(0, 32))}`);
    this.remaining = parseInt(size, 16);
    this.state = this.remaining === 0 ? State.Trailers : State.ChunkData;
    return at + end + 2 - before;
  }
}

/** A head as read: the header lines become Node's headers object (names lower-cased, repeats joined, cookies listed) on first use. */
class ParsedHead implements ResponseHead {
  private made?: IncomingHttpHeaders;

  constructor(
    readonly status: number,
    readonly keepAlive: boolean,
    private readonly lines: string[],
  ) {}

  get headers(): IncomingHttpHeaders {
    return (this.made ??= headersOf(this.lines));
  }
}

function headersOf(lines: string[]): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    const key = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    const held = headers[key];
    if (key === 'set-cookie') headers[key] = [...((held as string[] | undefined) ?? []), value];
    else headers[key] = held === undefined ? value : `${held as string}, ${value}`;
  }
  return headers;
}

/** The one value of a Content-Length listed several times ("5, 5"), or '' when they differ. */
function oneLength(length: string): string {
  const values = new Set(length.split(',').map((v) => v.trim()));
  return values.size === 1 ? [...values][0]! : '';
}
