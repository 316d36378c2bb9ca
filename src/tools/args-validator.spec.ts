import { compileArgsValidator, parseArguments } from './args-validator';

describe('compileArgsValidator', () => {
  const validate = compileArgsValidator({
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
    required: ['city'],
    additionalProperties: false,
  });

  it('accepts valid arguments', () => {
    expect(validate({ city: 'Oslo', days: 2 })).toBeUndefined();
  });

  it('names every problem, in terms of the arguments', () => {
    const msg = validate({ days: 0, extra: true });
    expect(msg).toContain("must have required property 'city'");
    expect(msg).toContain('arguments/days must be >= 1');
    expect(msg).toContain('must NOT have additional properties');
  });

  it('refuses an invalid schema at compile time', () => {
    expect(() => compileArgsValidator({ type: 'object', properties: { a: { type: 'no-such-type' } } })).toThrow();
  });
});

describe('parseArguments', () => {
  it('reads a JSON object, and empty text as {}', () => {
    expect(parseArguments('{"a":1}')).toEqual({ args: { a: 1 } });
    expect(parseArguments('  ')).toEqual({ args: {} });
  });
  it('rejects non-JSON and non-objects', () => {
    expect(parseArguments('{oops')).toEqual({ error: expect.stringContaining('not valid JSON') });
    expect(parseArguments('[1]')).toEqual({ error: 'the arguments must be a JSON object' });
  });
});
