import { openApiComponents, toOpenApi30 } from './openapi-json-schema';

describe('custom type schemas in OpenAPI 3.0', () => {
  it('hoists $defs to components and points $refs at them', () => {
    const components = openApiComponents('Plan', {
      type: 'object',
      properties: { steps: { type: 'array', items: { $ref: '#/$defs/Step' } } },
      required: ['steps'],
      $defs: { Step: { type: 'object', properties: { title: { type: 'string' } } } },
    });
    expect(components).toEqual({
      Step: { type: 'object', properties: { title: { type: 'string' } } },
      Plan: { type: 'object', properties: { steps: { type: 'array', items: { $ref: '#/components/schemas/Step' } } }, required: ['steps'] },
    });
  });

  it('turns Optional into nullable, const into enum, and type lists into nullable types', () => {
    expect(toOpenApi30({ anyOf: [{ type: 'string' }, { type: 'null' }], default: null })).toEqual({ type: 'string', nullable: true, default: null });
    expect(toOpenApi30({ anyOf: [{ $ref: '#/$defs/Step' }, { type: 'null' }] })).toEqual({ allOf: [{ $ref: '#/components/schemas/Step' }], nullable: true });
    expect(toOpenApi30({ anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] })).toEqual({
      anyOf: [{ type: 'string' }, { type: 'integer' }],
      nullable: true,
    });
    expect(toOpenApi30({ const: 'a', type: 'string' })).toEqual({ enum: ['a'], type: 'string' });
    expect(toOpenApi30({ type: ['integer', 'null'] })).toEqual({ type: 'integer', nullable: true });
    expect(toOpenApi30({ type: 'object', additionalProperties: { type: ['number', 'null'] } })).toEqual({
      type: 'object',
      additionalProperties: { type: 'number', nullable: true },
    });
  });
});
