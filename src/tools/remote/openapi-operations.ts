import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { JsonSchema } from '../tool.port';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
export type HttpMethod = (typeof METHODS)[number];

export interface OperationParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
  description?: string;
}

/** One OpenAPI operation, with its `$ref`s resolved: what an HTTP tool needs. */
export interface OpenApiOperation {
  operationId: string;
  method: HttpMethod;
  path: string;
  description: string;
  parameters: OperationParameter[];
  body?: { schema: JsonSchema; required: boolean; description?: string };
  /** `x-ta-risk` on the operation, when the API author declares it. */
  declaredRisk?: string;
}

export interface OpenApiDocument {
  servers: string[];
  operations: OpenApiOperation[];
}

type Obj = Record<string, unknown>;

/**
 * Reads an OpenAPI 3.x document (JSON or YAML) into its operations. Local `$ref`s
 * (`#/components/...`) are inlined; a recursive schema is cut at its second appearance (as an
 * unconstrained value) so the result stays finite. Cookie parameters and non-JSON bodies are not
 * supported and are reported.
 */
export function readOpenApiDocument(file: string): OpenApiDocument {
  const text = readFileSync(file, 'utf8');
  const doc = (file.endsWith('.json') ? JSON.parse(text) : parse(text)) as Obj;
  if (typeof doc?.openapi !== 'string' || !doc.openapi.startsWith('3.')) {
    throw new Error('not an OpenAPI 3.x document (no "openapi: 3.x" field)');
  }
  const deref = (v: unknown, seen: string[] = []): unknown => resolveRefs(doc, v, seen);
  const operations: OpenApiOperation[] = [];
  for (const [path, rawItem] of Object.entries((doc.paths ?? {}) as Obj)) {
    const item = deref(rawItem) as Obj;
    const shared = (item.parameters ?? []) as Obj[];
    for (const method of METHODS) {
      const op = item[method] as Obj | undefined;
      if (!op) continue;
      const params = mergeParameters(shared, (op.parameters ?? []) as Obj[]);
      const operationId = typeof op.operationId === 'string' ? op.operationId : `${method}${path.replace(/[^A-Za-z0-9]+/g, '_')}`;
      const body = requestBody(op.requestBody as Obj | undefined, operationId);
      operations.push({
        operationId,
        method,
        path,
        description: String(op.description ?? op.summary ?? `${method.toUpperCase()} ${path}`),
        parameters: params
          .filter((p) => p.in !== 'cookie')
          .map((p) => ({
            name: String(p.name),
            in: p.in as OperationParameter['in'],
            required: p.in === 'path' || p.required === true,
            schema: (p.schema ?? { type: 'string' }) as JsonSchema,
            description: typeof p.description === 'string' ? p.description : undefined,
          })),
        body,
        declaredRisk: typeof op['x-ta-risk'] === 'string' ? op['x-ta-risk'] : undefined,
      });
    }
  }
  const servers = ((doc.servers ?? []) as Obj[]).map((s) => String(s.url)).filter(Boolean);
  return { servers, operations };

  function mergeParameters(shared: Obj[], own: Obj[]): Obj[] {
    const all = [...shared, ...own].map((p) => deref(p) as Obj);
    const byKey = new Map<string, Obj>();
    for (const p of all) byKey.set(`${String(p.in)}:${String(p.name)}`, p); // the operation's own win
    return [...byKey.values()];
  }

  function requestBody(raw: Obj | undefined, operationId: string): OpenApiOperation['body'] {
    if (!raw) return undefined;
    const rb = deref(raw) as Obj;
    const content = (rb.content ?? {}) as Obj;
    const json = Object.entries(content).find(([type]) => /^application\/([\w.+-]+\+)?json/.test(type));
    if (!json) throw new Error(`operation ${operationId}: only JSON request bodies are supported (got ${Object.keys(content).join(', ')})`);
    return {
      schema: ((json[1] as Obj).schema ?? {}) as JsonSchema,
      required: rb.required === true,
      description: typeof rb.description === 'string' ? rb.description : undefined,
    };
  }
}

function resolveRefs(doc: Obj, value: unknown, seen: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(doc, v, seen));
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Obj;
  if (typeof obj.$ref === 'string') {
    const ref = obj.$ref;
    if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported (got ${ref})`);
    if (seen.includes(ref)) return {}; // recursion: leave the nested value unconstrained
    const target = ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((node, key) => (node as Obj | undefined)?.[key], doc);
    if (target === undefined) throw new Error(`unresolved $ref ${ref}`);
    return resolveRefs(doc, target, [...seen, ref]);
  }
  const out: Obj = {};
  for (const [k, v] of Object.entries(obj)) out[k] = resolveRefs(doc, v, seen);
  return out;
}
