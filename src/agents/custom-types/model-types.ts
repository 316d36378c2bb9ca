import type { FieldError } from '../../common/errors/domain-error';

/**
 * The types a pydantic model of a `custom_types.py` can have here, once read: what the
 * annotations `str`, `int`, `float`, `bool`, `None`, `Any`, `list[...]`, `dict[str, ...]`,
 * `Optional[...]`, `X | Y`, `Union[...]`, `Literal[...]` and other models or Enums of the file
 * (or of upstream's `sk_agents.ska_types`) become.
 */
export type TypeNode =
  | { k: 'str' | 'int' | 'float' | 'bool' | 'none' | 'any' }
  | { k: 'list'; item: TypeNode }
  | { k: 'dict'; value: TypeNode }
  | { k: 'union'; options: TypeNode[] }
  | { k: 'literal'; values: LiteralValue[] }
  /** A model or Enum, by its name in the registry. */
  | { k: 'ref'; name: string };

export type LiteralValue = string | number | boolean | null;

export interface ModelField {
  name: string;
  type: TypeNode;
  /** No default: the key must be present (pydantic v2: `Optional[X]` without a default is required too). */
  required: boolean;
  default?: unknown;
  description?: string;
  title?: string;
  examples?: unknown[];
}

export interface ModelDecl {
  kind: 'model';
  name: string;
  /** The docstring (pydantic's model description). */
  description?: string;
  fields: ModelField[];
  /** Upstream's `mode="before"` validators of its own models (HistoryMultiModalMessage's content → items). */
  before?: (value: unknown) => unknown;
}

export interface EnumDecl {
  kind: 'enum';
  name: string;
  description?: string;
  values: (string | number)[];
}

export type TypeDecl = ModelDecl | EnumDecl;
export type TypeRegistry = ReadonlyMap<string, TypeDecl>;

export type JsonSchema = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// JSON Schema, in the shape pydantic's `model_json_schema()` gives (2020-12, models under $defs)

export function modelJsonSchema(root: string, registry: TypeRegistry): JsonSchema {
  const defs: Record<string, JsonSchema> = {};
  const pending = new Set<string>();
  const visit = (t: TypeNode): JsonSchema =>
    typeSchema(t, (name) => {
      if (name !== root && !defs[name] && !pending.has(name)) {
        pending.add(name);
        defs[name] = declSchema(registry.get(name)!, visit);
      }
    });
  const schema = declSchema(registry.get(root)!, visit);
  if (Object.keys(defs).length) schema.$defs = Object.fromEntries(Object.entries(defs).sort(([a], [b]) => a.localeCompare(b)));
  return schema;
}

function declSchema(decl: TypeDecl, visit: (t: TypeNode) => JsonSchema): JsonSchema {
  if (decl.kind === 'enum') {
    const type = decl.values.every((v) => typeof v === 'string') ? 'string' : decl.values.every((v) => Number.isInteger(v)) ? 'integer' : undefined;
    return { title: decl.name, ...(decl.description ? { description: decl.description } : {}), enum: decl.values, ...(type ? { type } : {}) };
  }
  const properties: Record<string, JsonSchema> = {};
  for (const f of decl.fields) {
    const s = visit(f.type);
    if (f.title !== undefined) s.title = f.title;
    if (f.description !== undefined) s.description = f.description;
    if (!f.required) s.default = f.default;
    if (f.examples) s.examples = f.examples;
    properties[f.name] = s;
  }
  const required = decl.fields.filter((f) => f.required).map((f) => f.name);
  return {
    title: decl.name,
    ...(decl.description ? { description: decl.description } : {}),
    type: 'object',
    properties,
    ...(required.length ? { required } : {}),
  };
}

function typeSchema(t: TypeNode, ref: (name: string) => void): JsonSchema {
  switch (t.k) {
    case 'str':
      return { type: 'string' };
    case 'int':
      return { type: 'integer' };
    case 'float':
      return { type: 'number' };
    case 'bool':
      return { type: 'boolean' };
    case 'none':
      return { type: 'null' };
    case 'any':
      return {};
    case 'list':
      return { type: 'array', items: typeSchema(t.item, ref) };
    case 'dict':
      return { type: 'object', additionalProperties: t.value.k === 'any' ? true : typeSchema(t.value, ref) };
    case 'union':
      return { anyOf: t.options.map((o) => typeSchema(o, ref)) };
    case 'literal': {
      const kinds = new Set(t.values.map((v) => (v === null ? 'null' : typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v)));
      const type = kinds.size === 1 ? [...kinds][0] : undefined;
      return t.values.length === 1 ? { const: t.values[0], ...(type ? { type } : {}) } : { enum: t.values, ...(type ? { type } : {}) };
    }
    case 'ref':
      ref(t.name);
      return { $ref: `#/$defs/${t.name}` };
  }
}

// ---------------------------------------------------------------------------------------------
// Validation, as pydantic's (lax mode) does for a JSON body: defaults filled in, unknown keys
// ignored, numeric strings accepted for numbers; errors by dotted path with pydantic's wording.

export type ParseResult = { ok: true; value: unknown } | { ok: false; errors: FieldError[] };

export function validateModel(root: string, registry: TypeRegistry, value: unknown): ParseResult {
  const errors: FieldError[] = [];
  const out = check({ k: 'ref', name: root }, value, [], registry, true, errors);
  return errors.length ? { ok: false, errors } : { ok: true, value: out };
}

type Path = (string | number)[];

const fail = (errors: FieldError[], path: Path, message: string): undefined => {
  errors.push({ field: path.join('.'), message });
  return undefined;
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const TRUE = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE = new Set(['false', '0', 'no', 'off', 'f', 'n']);

function check(t: TypeNode, v: unknown, path: Path, registry: TypeRegistry, lax: boolean, errors: FieldError[]): unknown {
  switch (t.k) {
    case 'any':
      return v;
    case 'str':
      return typeof v === 'string' ? v : fail(errors, path, 'Input should be a valid string');
    case 'int': {
      if (typeof v === 'number' && Number.isInteger(v)) return v;
      if (lax && typeof v === 'number' && Number.isFinite(v)) return fail(errors, path, 'Input should be a valid integer, got a number with a fractional part');
      if (lax && typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) return Number(v.trim());
      return fail(errors, path, 'Input should be a valid integer');
    }
    case 'float': {
      if (typeof v === 'number') return v;
      if (lax && typeof v === 'string' && v.trim() && Number.isFinite(Number(v))) return Number(v);
      return fail(errors, path, 'Input should be a valid number');
    }
    case 'bool': {
      if (typeof v === 'boolean') return v;
      if (lax && (v === 0 || v === 1)) return v === 1;
      if (lax && typeof v === 'string' && (TRUE.has(v.toLowerCase()) || FALSE.has(v.toLowerCase()))) return TRUE.has(v.toLowerCase());
      return fail(errors, path, 'Input should be a valid boolean');
    }
    case 'none':
      return v === null ? null : fail(errors, path, 'Input should be None');
    case 'literal':
      if (t.values.some((x) => x === v)) return v;
      return fail(errors, path, `Input should be ${orList(t.values.map((x) => (typeof x === 'string' ? `'${x}'` : x === null ? 'None' : String(x))))}`);
    case 'list': {
      if (!Array.isArray(v)) return fail(errors, path, 'Input should be a valid list');
      return v.map((item, i) => check(t.item, item, [...path, i], registry, lax, errors));
    }
    case 'dict': {
      if (!isObject(v)) return fail(errors, path, 'Input should be a valid dictionary');
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, check(t.value, x, [...path, k], registry, lax, errors)]));
    }
    case 'union': {
      // pydantic's smart mode: an exact match wins over a coerced one; the first match otherwise.
      for (const mode of lax ? [false, true] : [false]) {
        for (const option of t.options) {
          const attempt: FieldError[] = [];
          const out = check(option, v, path, registry, mode, attempt);
          if (!attempt.length) return out;
        }
      }
      return fail(errors, path, `Input should be ${orList(t.options.map((o) => describeType(o)))}`);
    }
    case 'ref': {
      const decl = registry.get(t.name)!;
      if (decl.kind === 'enum') {
        if (decl.values.some((x) => x === v)) return v;
        return fail(errors, path, `Input should be ${orList(decl.values.map((x) => (typeof x === 'string' ? `'${x}'` : String(x))))}`);
      }
      const input = decl.before ? decl.before(v) : v;
      if (!isObject(input)) return fail(errors, path, `Input should be a valid dictionary or instance of ${decl.name}`);
      const out: Record<string, unknown> = {};
      for (const f of decl.fields) {
        if (Object.hasOwn(input, f.name)) out[f.name] = check(f.type, input[f.name], [...path, f.name], registry, lax, errors);
        else if (f.required) fail(errors, [...path, f.name], 'Field required');
        else out[f.name] = structuredClone(f.default);
      }
      return out;
    }
  }
}

function describeType(t: TypeNode): string {
  switch (t.k) {
    case 'str':
      return 'a valid string';
    case 'int':
      return 'a valid integer';
    case 'float':
      return 'a valid number';
    case 'bool':
      return 'a valid boolean';
    case 'none':
      return 'None';
    case 'any':
      return 'any value';
    case 'list':
      return 'a valid list';
    case 'dict':
      return 'a valid dictionary';
    case 'literal':
      return orList(t.values.map((x) => (typeof x === 'string' ? `'${x}'` : x === null ? 'None' : String(x))));
    case 'union':
      return orList(t.options.map(describeType));
    case 'ref':
      return `an instance of ${t.name}`;
  }
}

function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

/** The models and Enums a declaration reaches through its fields, in order (for cycle checks). */
export function referencedNames(t: TypeNode): string[] {
  switch (t.k) {
    case 'list':
      return referencedNames(t.item);
    case 'dict':
      return referencedNames(t.value);
    case 'union':
      return t.options.flatMap(referencedNames);
    case 'ref':
      return [t.name];
    default:
      return [];
  }
}
