import pino from 'pino';
import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { plainLine, PlainValue } from './log-line';

/** A destination that keeps what it is given, one entry per write. */
function sink() {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) } };
}

/** The line with its time made fixed, so two lines written a millisecond apart compare. */
const untimed = (line: string) => line.replace(/"time":"[^"]*"/, '"time":"T"');

describe('plainLine', () => {
  const cases: Record<string, Record<string, PlainValue>> = {
    ids: { http_request_id: 'a1', trace_id: '0af7651916cd43dd8448eb211c80319c', method: 'POST', status: 200, duration_ms: 7, aborted: false },
    'strings that need escaping': { path: '/a"b\\c\n\t\u0001é😀', route: '\u2028', agent: 'x"' },
    'undefined fields left out, odd numbers': { route: undefined, status: 404, duration_ms: Number.NaN, big: Number.POSITIVE_INFINITY, neg: -1.5, t: true },
    'no fields': {},
  };

  it.each(Object.entries(cases))('writes byte for byte what the server logger writes through pino (%s)', (_name, fields) => {
    const ours = sink();
    const theirs = sink();
    plainLine(createLogger('info', ours.stream), 'info', fields, 'request completed');
    createLogger('info', theirs.stream).info(fields, 'request completed');
    expect(ours.lines).toHaveLength(1);
    expect(untimed(ours.lines[0]!)).toBe(untimed(theirs.lines[0]!));
    expect(ours.lines[0]!.endsWith('}\n')).toBe(true);
    JSON.parse(ours.lines[0]!);
  });

  it('writes each level with its label, and nothing below the logger level', () => {
    const out = sink();
    const logger = createLogger('info', out.stream);
    for (const level of ['debug', 'info', 'warn', 'error'] as const) plainLine(logger, level, { status: 1 }, 'm');
    expect(out.lines.map((l) => (JSON.parse(l) as { level: string }).level)).toEqual(['info', 'warn', 'error']);
  });

  it("keeps a child logger's bindings, before the fields", () => {
    const out = sink();
    plainLine(createLogger('info', out.stream).child({ component: 'http' }), 'info', { status: 200 }, 'm');
    expect(out.lines[0]).toMatch(/^\{"level":"info","time":"[^"]+","service":"teal-agent-server","component":"http","status":200,"msg":"m"\}\n$/);
  });

  it('does not call the mixin (the caller gives its fields)', () => {
    const out = sink();
    const mixin = jest.fn(() => ({ trace_id: 'from-mixin' }));
    plainLine(createLogger('info', out.stream, mixin), 'info', { trace_id: 'given' }, 'm');
    expect(mixin).not.toHaveBeenCalled();
    expect((JSON.parse(out.lines[0]!) as { trace_id: string }).trace_id).toBe('given');
  });

  it('goes through pino for a logger it cannot mirror (a logMethod hook, a multistream)', () => {
    const out = sink();
    const logMethod = jest.fn(function (this: pino.Logger, args: Parameters<pino.LogFn>, method: pino.LogFn) {
      return method.apply(this, args);
    });
    plainLine(pino({ hooks: { logMethod } }, out.stream), 'info', { status: 200 }, 'm');
    expect(logMethod).toHaveBeenCalledTimes(1);
    expect(JSON.parse(out.lines[0]!)).toMatchObject({ status: 200, msg: 'm' });

    const lines: string[] = [];
    const dest = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) });
    const multi = pino({}, pino.multistream([{ stream: dest, level: 'warn' }]));
    plainLine(multi, 'info', { status: 200 }, 'below the stream level');
    plainLine(multi, 'warn', { status: 500 }, 'at it');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['at it']);
  });
});
