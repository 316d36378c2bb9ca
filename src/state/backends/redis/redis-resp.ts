// Redis's protocol, RESP2 (https://redis.io/docs/latest/develop/reference/protocol-spec/): the
// commands the store sends and the replies it reads. The connection is redis-wire.ts.

/** A reply Redis sent as an error (`-ERR …`, `-NOSCRIPT …`, `-WRONGTYPE …`): `message` is its line. */
export class ReplyError extends Error {
  override readonly name = 'ReplyError';
}

/** A reply: a simple or bulk string (UTF-8), an integer, nil, an array of replies, or an error. */
export type RespReply = string | number | null | ReplyError | RespReply[];

/** A command's arguments: numbers are sent as their decimal text, as Redis reads them. */
export type RespArg = string | number;

/**
 * Redis's own limit on one bulk string (proto-max-bulk-len's default, 512 MiB): a reply whose
 * declared length is larger, or a reply still unfinished once this much of it is buffered, is not
 * Redis speaking, and the connection is dropped (RespParser's `onProtocolError`).
 */
export const MAX_REPLY_BYTES = 512 * 1024 * 1024;

/**
 * One command as RESP: an array of bulk strings, in one string (written to the socket at once,
 * UTF-8), each argument framed by its UTF-8 length (measured without encoding it).
 */
export function encodeCommand(args: readonly RespArg[]): string {
  let out = `*${args.length}\r\n`;
  for (const arg of args) {
    const text = typeof arg === 'string' ? arg : String(arg);
    out += `$${Buffer.byteLength(text, 'utf8')}\r\n${text}\r\n`;
  }
  return out;
}

/** What `parseAt` found: the reply and where the next one starts, or how many bytes it needs at least. */
type Parsed = { value: RespReply; end: number } | { need: number };

const CR = 13;

/**
 * Reads replies from a connection's bytes as they arrive, in order, handing each complete one to
 * `onReply`. Bytes of an unfinished reply are kept (in the chunks they came in, joined once enough
 * has arrived for the part it waits for: a reply of many MiB is not joined again on every chunk).
 */
export class RespParser {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes needed before parsing again is worth it (a bulk string's whole length, once known). */
  private need = 0;

  constructor(
    private readonly onReply: (reply: RespReply) => void,
    private readonly onProtocolError: (err: Error) => void,
  ) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.need) return;
    let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    let pos = 0;
    while (pos < buf.length) {
      let parsed: Parsed;
      try {
        parsed = parseAt(buf, pos);
      } catch (err) {
        this.reset();
        this.onProtocolError(err as Error);
        return;
      }
      if ('need' in parsed) {
        if (parsed.need - pos > MAX_REPLY_BYTES) {
          this.reset();
          this.onProtocolError(new Error(`Redis reply larger than ${MAX_REPLY_BYTES} bytes`));
          return;
        }
        buf = buf.subarray(pos);
        this.chunks = [buf];
        this.buffered = buf.length;
        this.need = parsed.need - pos;
        return;
      }
      pos = parsed.end;
      this.onReply(parsed.value);
    }
    this.reset();
  }

  /** Forgets buffered bytes (the connection they came on is gone). */
  reset(): void {
    this.chunks = [];
    this.buffered = 0;
    this.need = 0;
  }
}

/** The reply starting at `pos`, or the buffer length it needs at least to be complete. */
function parseAt(buf: Buffer, pos: number): Parsed {
  const lineEnd = buf.indexOf(CR, pos + 1);
  if (lineEnd < 0 || lineEnd + 1 >= buf.length) return { need: Math.max(buf.length + 1, lineEnd + 2) };
  const type = buf[pos];
  const line = buf.toString('latin1', pos + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case 0x2b: // '+'
      return { value: buf.toString('utf8', pos + 1, lineEnd), end: next };
    case 0x2d: // '-'
      return { value: new ReplyError(buf.toString('utf8', pos + 1, lineEnd)), end: next };
    case 0x3a: // ':'
      return { value: integer(line), end: next };
    case 0x24: {
      // '$': a bulk string, or nil ($-1)
      const length = integer(line);
      if (length < 0) return { value: null, end: next };
      if (length > MAX_REPLY_BYTES) throw new Error(`Redis bulk reply of ${length} bytes`);
      const end = next + length + 2;
      if (end > buf.length) return { need: end };
      return { value: buf.toString('utf8', next, next + length), end };
    }
    case 0x2a: {
      // '*': an array, or nil (*-1)
      const count = integer(line);
      if (count < 0) return { value: null, end: next };
      const items: RespReply[] = new Array<RespReply>(count);
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseAt(buf, at);
        if ('need' in item) return item;
        items[i] = item.value;
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`Redis sent an unknown reply type 0x${(type ?? 0).toString(16)}`);
  }
}

function integer(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n)) throw new Error(`Redis sent ${JSON.stringify(text)} where an integer belongs`);
  return n;
}
