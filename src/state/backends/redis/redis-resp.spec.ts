import { encodeCommand, MAX_REPLY_BYTES, ReplyError, RespParser, RespReply } from './redis-resp';

/** Parses `wire` delivered in the given chunk sizes; returns the replies and any protocol error. */
function parse(wire: Buffer, chunkSizes: number[] = [wire.length]): { replies: RespReply[]; error?: Error } {
  const replies: RespReply[] = [];
  let error: Error | undefined;
  const parser = new RespParser(
    (r) => replies.push(r),
    (e) => (error = e),
  );
  let at = 0;
  for (const size of chunkSizes) {
    parser.push(wire.subarray(at, at + size));
    at += size;
  }
  if (at < wire.length) parser.push(wire.subarray(at));
  return { replies, error };
}

describe('RESP commands (encodeCommand)', () => {
  it('is an array of bulk strings, numbers as decimal text', () => {
    expect(encodeCommand(['SET', 'k', 42])).toBe('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n42\r\n');
    expect(encodeCommand(['GET', ''])).toBe('*2\r\n$3\r\nGET\r\n$0\r\n\r\n');
  });

  it("counts each argument's length in UTF-8 bytes, not characters", () => {
    const text = 'é→😀';
    const encoded = encodeCommand(['SET', text]);
    expect(encoded).toBe(`*2\r\n$3\r\nSET\r\n$${Buffer.byteLength(text)}\r\n${text}\r\n`);
    expect(Buffer.byteLength(text)).toBe(9);
    // What Redis would read back: the declared length is exactly the bytes that follow.
    expect(parse(Buffer.from(`$9\r\n${text}\r\n`)).replies).toEqual([text]);
  });

  it('keeps CR and LF inside arguments (lengths, not delimiters, frame them)', () => {
    expect(encodeCommand(['SET', 'a\r\nb'])).toBe('*2\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n');
  });
});

describe('RESP replies (RespParser)', () => {
  const wire = Buffer.from(
    [
      '+OK\r\n',
      '-NOSCRIPT No matching script. Please use EVAL.\r\n',
      ':-12\r\n',
      '$5\r\nhé\r\n\r\n', // 'hé' is 3 bytes, then CR LF inside the value
      '$-1\r\n',
      '*-1\r\n',
      '*0\r\n',
      '*3\r\n$2\r\nok\r\n*2\r\n:1\r\n$-1\r\n-ERR inner\r\n',
    ].join(''),
  );
  const expected: RespReply[] = [
    'OK',
    new ReplyError('NOSCRIPT No matching script. Please use EVAL.'),
    -12,
    'hé\r\n',
    null,
    null,
    [],
    ['ok', [1, null], new ReplyError('ERR inner')],
  ];

  it('reads every reply type: simple, error, integer, bulk (UTF-8, binary-safe), nil, arrays nested', () => {
    const { replies, error } = parse(wire);
    expect(error).toBeUndefined();
    expect(replies).toEqual(expected);
    expect(replies[1]).toBeInstanceOf(ReplyError);
    expect((replies[1] as ReplyError).name).toBe('ReplyError');
    expect((replies[7] as RespReply[])[2]).toBeInstanceOf(ReplyError);
  });

  it('gives the same replies however the bytes are split (every split point, and one byte at a time)', () => {
    for (let cut = 1; cut < wire.length; cut++) expect(parse(wire, [cut]).replies).toEqual(expected);
    expect(
      parse(
        wire,
        Array.from({ length: wire.length }, () => 1),
      ).replies,
    ).toEqual(expected);
  });

  it('reads a large bulk reply that arrives in many chunks, and what follows it', () => {
    const value = 'x'.repeat(3 * 1024 * 1024) + 'ü';
    const bytes = Buffer.concat([Buffer.from(`*2\r\n$${Buffer.byteLength(value)}\r\n${value}\r\n:7\r\n`), Buffer.from('+PONG\r\n')]);
    const { replies } = parse(
      bytes,
      Array.from({ length: Math.ceil(bytes.length / 65536) }, () => 65536),
    );
    expect(replies).toHaveLength(2);
    expect((replies[0] as RespReply[])[0]).toBe(value);
    expect((replies[0] as RespReply[])[1]).toBe(7);
    expect(replies[1]).toBe('PONG');
  });

  it('refuses what is not RESP: an unknown type, a bad integer, a bulk beyond Redis own limit', () => {
    expect(parse(Buffer.from('!oops\r\n')).error?.message).toMatch(/unknown reply type 0x21/);
    expect(parse(Buffer.from(':12a\r\n')).error?.message).toMatch(/where an integer belongs/);
    expect(parse(Buffer.from(`$${MAX_REPLY_BYTES + 1}\r\n`)).error?.message).toMatch(/bulk reply of/);
  });

  it('forgets a partial reply on reset (the connection it came on is gone)', () => {
    const replies: RespReply[] = [];
    const parser = new RespParser(
      (r) => replies.push(r),
      () => undefined,
    );
    parser.push(Buffer.from('$10\r\nabc'));
    parser.reset();
    parser.push(Buffer.from('+OK\r\n'));
    expect(replies).toEqual(['OK']);
  });
});
