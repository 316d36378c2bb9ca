/**
 * `local/echo` asked for structured output: it still echoes, in the requested shape. When the last
 * user message is itself JSON it is the answer, as is (so a demo or a test can script a valid or
 * an invalid answer offline); otherwise the answer is the simplest value of the schema, with every
 * string field holding the message's text: `{"result": 0}` for `{result: int}`,
 * `{"summary": "hello"}` for `{summary: str}`. The server validates it like any model's answer.
 */
export function structuredEcho(schema: Record<string, unknown>, text: string): string {
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      JSON.parse(trimmed);
      return trimmed;
    } catch {
      // not JSON after all: fall through
    }
  }
  return JSON.stringify(instanceOf(schema, schema, text, 0));
}

type Schema = Record<string, unknown>;

function instanceOf(s: Schema, root: Schema, text: string, depth: number): unknown {
  if (depth > 16) return null;
  if (typeof s.$ref === 'string') {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const target = m ? ((root[m[1]!] as Record<string, Schema> | undefined)?.[decodeURIComponent(m[2]!)] ?? {}) : s.$ref === '#' ? root : {};
    return instanceOf(target, root, text, depth + 1);
  }
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0] ?? null;
  const branches = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (Array.isArray(branches) && branches.length) {
    const real = branches.find((b) => b.type !== 'null') ?? branches[0]!;
    return instanceOf(real, root, text, depth + 1);
  }
  const types = Array.isArray(s.type) ? (s.type as string[]) : [s.type as string | undefined];
  const type = types.find((t) => t && t !== 'null') ?? types[0];
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(props).map(([k, p]) => [k, instanceOf(p, root, text, depth + 1)]));
    }
    case 'array':
      return [];
    case 'string':
      return text;
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' && s.minimum > 0 ? Math.ceil(s.minimum) : 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return s.properties ? instanceOf({ ...s, type: 'object' }, root, text, depth) : null;
  }
}
