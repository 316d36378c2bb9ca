import { basename } from 'node:path';
import type { z } from 'zod';
import type { FieldError } from '../../common/errors/domain-error';
import type { DataType, JsonSchema, ParseResult } from './data-type';

/**
 * Types from a `custom_types.ts` / `.js` module beside the config: each `input_type` /
 * `output_type` name is an export (named, or a key of the default export) holding a zod 4 schema
 * or a JSON Schema object. zod schemas validate themselves and give their JSON Schema
 * (`z.toJSONSchema`); a JSON Schema is validated through `z.fromJSONSchema`.
 */
export function loadTypesModule(file: string): { exports: Record<string, unknown> } | { error: string } {
  try {
    // Node 24 loads TypeScript (type stripping) and ES modules through require() as well.
    const mod = require(file) as Record<string, unknown> | undefined;
    const fromDefault = typeof mod?.default === 'object' && mod.default !== null ? (mod.default as Record<string, unknown>) : {};
    return { exports: { ...fromDefault, ...(mod ?? {}) } };
  } catch (e) {
    return { error: (e as Error)?.message ?? String(e) };
  }
}

export function jsDataType(name: string, value: unknown, file: string): DataType | { problem: string } {
  const origin = basename(file);
  // Loaded here, not at the top: only agents with a custom types module need zod (~100 modules).
  const { z } = require('zod') as typeof import('zod');
  if (isZodSchema(value)) {
    let schema: JsonSchema;
    try {
      schema = z.toJSONSchema(value, { io: 'input', unrepresentable: 'throw' }) as JsonSchema;
    } catch (e) {
      return { problem: `export "${name}": the zod schema has no JSON Schema form (${(e as Error).message})` };
    }
    delete schema.$schema;
    return { name, origin, schema, fields: topLevelFields(schema), parse: (v) => fromZod(value.safeParse(v)) };
  }
  if (isZod3Schema(value)) return { problem: `export "${name}" is a zod 3 schema: use zod 4 (import { z } from 'zod')` };
  if (isJsonSchema(value)) {
    let validator: z.ZodType;
    try {
      validator = z.fromJSONSchema(value as never);
    } catch (e) {
      return { problem: `export "${name}": the JSON Schema cannot be used for validation (${(e as Error).message})` };
    }
    const schema = structuredClone(value);
    delete schema.$schema;
    return { name, origin, schema, fields: topLevelFields(schema), parse: (v) => fromZod(validator.safeParse(v)) };
  }
  return { problem: `export "${name}" is neither a zod schema nor a JSON Schema object` };
}

function isZodSchema(v: unknown): v is z.ZodType {
  return typeof v === 'object' && v !== null && '_zod' in v && typeof (v as { safeParse?: unknown }).safeParse === 'function';
}

function isZod3Schema(v: unknown): boolean {
  return typeof v === 'object' && v !== null && '_def' in v && typeof (v as { safeParse?: unknown }).safeParse === 'function';
}

const SCHEMA_KEYWORDS = ['type', 'properties', '$ref', 'anyOf', 'oneOf', 'allOf', 'enum', 'const', '$defs'];

function isJsonSchema(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && SCHEMA_KEYWORDS.some((k) => k in v);
}

function topLevelFields(schema: JsonSchema): string[] {
  let s = schema;
  const ref = typeof s.$ref === 'string' ? /^#\/(?:\$defs|definitions)\/(.+)$/.exec(s.$ref) : null;
  if (ref) s = ((schema.$defs ?? schema.definitions) as Record<string, JsonSchema> | undefined)?.[ref[1]!] ?? s;
  return typeof s.properties === 'object' && s.properties !== null ? Object.keys(s.properties) : [];
}

function fromZod(r: { success: true; data: unknown } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } }): ParseResult {
  if (r.success) return { ok: true, value: r.data };
  const errors: FieldError[] = r.error.issues.map((i) => ({ field: i.path.map(String).join('.'), message: i.message }));
  return { ok: false, errors };
}
