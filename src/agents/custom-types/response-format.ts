import type { LlmResponseFormat } from '../../llm/llm-client.port';
import type { DataType, JsonSchema } from './data-type';

/**
 * The `response_format` of an output type: its JSON Schema in OpenAI's strict subset. Every
 * property becomes required (strict mode has no optional keys; a field with a default is then
 * always answered, and a nullable one may be answered with null) and defaults are dropped; the
 * rest (`additionalProperties: false` everywhere, no open mappings, no unsupported keywords) is the
 * SDK's own `toStrictJsonSchema`, so a type the API would refuse is refused at boot instead.
 */
export function responseFormatFor(type: DataType): { format: LlmResponseFormat } | { problem: string } {
  const schema = structuredClone(type.schema);
  delete schema.$schema;
  requireEveryProperty(schema);
  // Loaded here, not at the top: only agents with an output type need it (~15 of the SDK's modules).
  const { toStrictJsonSchema } = require('openai/lib/transform') as typeof import('openai/lib/transform');
  let strict: JsonSchema;
  try {
    strict = toStrictJsonSchema(schema as never) as JsonSchema;
  } catch (e) {
    return { problem: `cannot be asked of the model as strict structured output: ${(e as Error).message.replace(/ See: https?:\/\/\S+/, '')}` };
  }
  const description = typeof schema.description === 'string' && schema.description.trim() ? schema.description : undefined;
  return { format: { name: type.name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'output', ...(description ? { description } : {}), schema: strict } };
}

const SCHEMA_MAPS = ['properties', '$defs', 'definitions'];
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SCHEMA_ONE = ['items', 'additionalProperties', 'not'];

function requireEveryProperty(node: unknown): void {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return;
  const s = node as JsonSchema;
  delete s.default;
  if (typeof s.properties === 'object' && s.properties !== null) s.required = Object.keys(s.properties);
  for (const k of SCHEMA_MAPS) if (typeof s[k] === 'object' && s[k] !== null) Object.values(s[k] as object).forEach(requireEveryProperty);
  for (const k of SCHEMA_LISTS) if (Array.isArray(s[k])) (s[k] as unknown[]).forEach(requireEveryProperty);
  for (const k of SCHEMA_ONE) requireEveryProperty(s[k]);
}
