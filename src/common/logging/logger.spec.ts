import { Writable } from 'node:stream';
import { createLogger, toLogLevel } from './logger';

function capture(mixin?: () => object) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return { logger: createLogger('info', destination, mixin), lines };
}

describe('createLogger', () => {
  it('writes one JSON object per line with level label, ISO time, service and the mixin fields', () => {
    const { logger, lines } = capture(() => ({ trace_id: 't'.repeat(32) }));
    logger.info({ a: 1 }, 'hello');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      service: 'teal-agent-server',
      trace_id: 't'.repeat(32),
      a: 1,
      msg: 'hello',
    });
  });

  it('lets the fields of the call win over the mixin (no duplicate keys)', () => {
    const { logger, lines } = capture(() => ({ request_id: 'from-mixin' }));
    logger.info({ request_id: 'explicit' }, 'x');
    expect(lines[0]!.match(/"request_id"/g)).toHaveLength(1);
    expect(JSON.parse(lines[0]!).request_id).toBe('explicit');
  });

  it.each([
    ['a bearer token in request headers', { req: { headers: { authorization: 'Bearer SECRET-1' } } }],
    ['a bare headers object', { headers: { authorization: 'Bearer SECRET-1' } }],
    ['headers one level deeper', { request: { headers: { authorization: 'Bearer SECRET-1' } } }],
    ['an api-key header', { req: { headers: { 'api-key': 'SECRET-1', 'x-api-key': 'SECRET-1' } } }],
    ['a cookie', { req: { headers: { cookie: 'session=SECRET-1' } } }],
    ['the environment config', { env: { llm: { apiKey: 'SECRET-1', baseUrl: 'http://x' } } }],
    ['an api key in options', { options: { apiKey: 'SECRET-1', api_key: 'SECRET-1' } }],
    ['a token field', { token: 'SECRET-1', auth: { token: 'SECRET-1' } }],
    ['a top-level authorization', { authorization: 'Bearer SECRET-1' }],
    ['a top-level api-key', { 'x-api-key': 'SECRET-1' }],
    ['an error carrying its request', { err: Object.assign(new Error('boom'), { request: { headers: { authorization: 'Bearer SECRET-1' } } }) }],
  ])('redacts %s', (_label, fields) => {
    const { logger, lines } = capture();
    logger.info(fields, 'something happened');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('SECRET-1');
    expect(lines[0]).toContain('[Redacted]');
  });

  it('keeps fields that are not credentials', () => {
    const { logger, lines } = capture();
    logger.info({ env: { llm: { baseUrl: 'http://model' } }, req: { headers: { 'content-type': 'application/json' } } }, 'x');
    expect(JSON.parse(lines[0]!)).toMatchObject({
      env: { llm: { baseUrl: 'http://model' } },
      req: { headers: { 'content-type': 'application/json' } },
    });
  });

  it('honours the level', () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger = createLogger('warn', destination);
    logger.info('dropped');
    logger.warn('kept');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('kept');
  });
});

describe('toLogLevel', () => {
  it('maps upstream names and rejects unknown ones', () => {
    expect(toLogLevel('WARNING')).toBe('warn');
    expect(toLogLevel('critical')).toBe('fatal');
    expect(toLogLevel('debug')).toBe('debug');
    expect(toLogLevel('loud')).toBeUndefined();
    expect(toLogLevel('')).toBeUndefined();
  });
});
