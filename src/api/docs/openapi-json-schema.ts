import type { JsonSchema } from '../../agents/custom-types/data-type';

/**
 * A custom type's JSON Schema (2020-12, models under `$defs`, as pydantic's `model_json_schema()`
 * gives) as OpenAPI 3.0 schema objects: the type itself and each model it uses become components
 * (`#/$defs/X` → `#/components/schemas/X`), `null` options become `nullable`, `const` a one-value
 * `enum`. Why not ship 2020-12 as is: the document is OpenAPI 3.0.3, and 3.0 tools (Swagger UI,
 * generators, upstream's orchestrators reading it with pydantic) do not know `type: "null"`.
 */
export function openApiComponents(name: string, schema: JsonSchema): Record<string, unknown> {
  const { $defs, ...root } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
  const out: Record<string, unknown> = {};
  for (const [def, s] of Object.entries($defs ?? {})) out[def] = toOpenApi30(s);
  out[name] = toOpenApi30(root);
  return out;
}

/** One schema node, converted (recursively). */
export function toOpenApi30(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toOpenApi30);
  if (!node || typeof node !== 'object') return node;
  const s = { ...(node as Record<string, unknown>) };
  delete s.$schema;
  delete s.$id;
  if (typeof s.$ref === 'string') return { $ref: s.$ref.replace(/^#\/\$defs\//, '#/components/schemas/') };
  if ('const' in s) {
    s.enum = [s.const];
    delete s.const;
  }
  if (Array.isArray(s.type)) {
    const types = (s.type as string[]).filter((t) => t !== 'null');
    if (types.length < (s.type as string[]).length) s.nullable = true;
    if (types.length === 1) s.type = types[0];
    else {
      delete s.type;
      if (types.length > 1) s.anyOf = types.map((type) => ({ type }));
    }
  }
  if (s.type === 'null') return { nullable: true };
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (!Array.isArray(s[key])) continue;
    const options = s[key] as unknown[];
    const nonNull = options.filter((o) => !(o && typeof o === 'object' && (o as Record<string, unknown>).type === 'null'));
    if (nonNull.length < options.length) s.nullable = true;
    if (nonNull.length === 1 && nonNull.length < options.length) {
      // `Optional[X]`: X itself, nullable (a $ref cannot carry siblings in 3.0: wrap it in allOf).
      const only = toOpenApi30(nonNull[0]) as Record<string, unknown>;
      delete s[key];
      Object.assign(s, '$ref' in only ? { allOf: [only] } : only, { nullable: true });
    } else s[key] = nonNull.map(toOpenApi30);
  }
  for (const key of ['items', 'additionalProperties', 'not'] as const) if (key in s) s[key] = toOpenApi30(s[key]);
  for (const key of ['properties', 'patternProperties'] as const) {
    if (s[key] && typeof s[key] === 'object') {
      s[key] = Object.fromEntries(Object.entries(s[key] as Record<string, unknown>).map(([k, v]) => [k, toOpenApi30(v)]));
    }
  }
  if (Array.isArray(s.allOf)) s.allOf = s.allOf.map(toOpenApi30);
  return s;
}
