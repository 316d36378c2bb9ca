/**
 * The subset of Jinja that upstream Sequential task instructions use: `{{ expr }}`,
 * `{% for k, v in map.items() %}`, `{% for x in list %}`, `{% if expr %}…{% else %}…{% endif %}`,
 * and `{# comments #}`. An expression is a path: `name`, `a.b`, `a["key"]`, `a['key']`, `a[0]`.
 * Like Jinja's default, an undefined value renders as the empty string. Compiled once at boot, so a
 * malformed template is a config error, not a runtime one.
 */

type Node =
  | { t: 'text'; v: string }
  | { t: 'expr'; path: PathSeg[] }
  | { t: 'for'; vars: string[]; path: PathSeg[]; items: boolean; body: Node[] }
  | { t: 'if'; path: PathSeg[]; negate: boolean; then: Node[]; else: Node[] };

type PathSeg = string | number;
type Scope = Record<string, unknown>;

export class TemplateError extends Error {}

const TOKEN = /({{[\s\S]*?}}|{%[\s\S]*?%}|{#[\s\S]*?#})/;
const PATH = /^([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*|\[\s*(?:"[^"]*"|'[^']*'|\d+)\s*\])*)$/;

export class InstructionTemplate {
  private constructor(private readonly nodes: Node[]) {}

  static compile(source: string): InstructionTemplate {
    const tokens = source.split(TOKEN).filter((t) => t !== '');
    let pos = 0;
    const parseBlock = (terminators: string[]): { nodes: Node[]; end?: string } => {
      const nodes: Node[] = [];
      while (pos < tokens.length) {
        const tok = tokens[pos++]!;
        if (tok.startsWith('{#')) continue;
        if (tok.startsWith('{{')) {
          nodes.push({ t: 'expr', path: parsePath(tok.slice(2, -2).trim()) });
          continue;
        }
        if (!tok.startsWith('{%')) {
          nodes.push({ t: 'text', v: tok });
          continue;
        }
        const stmt = tok.slice(2, -2).trim().replace(/^-|-$/g, '').trim();
        const keyword = stmt.split(/\s+/)[0]!;
        if (terminators.includes(keyword)) return { nodes, end: keyword };
        if (['endfor', 'endif', 'else'].includes(keyword)) throw new TemplateError(`unexpected {% ${keyword} %}`);
        if (keyword === 'for') {
          const m = /^for\s+([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*))?\s+in\s+(.+?)\s*$/.exec(stmt);
          if (!m) throw new TemplateError(`cannot read "{% ${stmt} %}"`);
          let expr = m[3]!;
          const items = expr.endsWith('.items()');
          if (items) expr = expr.slice(0, -'.items()'.length);
          const body = parseBlock(['endfor']);
          if (body.end !== 'endfor') throw new TemplateError('a {% for %} has no {% endfor %}');
          nodes.push({ t: 'for', vars: m[2] ? [m[1]!, m[2]] : [m[1]!], path: parsePath(expr), items, body: body.nodes });
          continue;
        }
        if (keyword === 'if') {
          let expr = stmt.slice(2).trim();
          const negate = expr.startsWith('not ');
          if (negate) expr = expr.slice(4).trim();
          const then = parseBlock(['else', 'endif']);
          let otherwise: Node[] = [];
          if (then.end === 'else') {
            const e = parseBlock(['endif']);
            if (e.end !== 'endif') throw new TemplateError('an {% if %} has no {% endif %}');
            otherwise = e.nodes;
          } else if (then.end !== 'endif') throw new TemplateError('an {% if %} has no {% endif %}');
          nodes.push({ t: 'if', path: parsePath(expr), negate, then: then.nodes, else: otherwise });
          continue;
        }
        throw new TemplateError(`unsupported statement "{% ${stmt} %}"`);
      }
      return { nodes };
    };
    return new InstructionTemplate(parseBlock([]).nodes);
  }

  render(scope: Scope): string {
    // A null-prototype root: `{{ constructor }}` must not reach Object.prototype.
    return renderNodes(this.nodes, Object.assign(Object.create(null) as Scope, scope));
  }
}

function parsePath(expr: string): PathSeg[] {
  const m = PATH.exec(expr);
  if (!m) throw new TemplateError(`unsupported expression "${expr}" (only names, .attr and ["key"] are supported)`);
  const segs: PathSeg[] = [m[1]!];
  const rest = m[2] ?? '';
  const re = /\.([A-Za-z_]\w*)|\[\s*(?:"([^"]*)"|'([^']*)'|(\d+))\s*\]/g;
  for (let r = re.exec(rest); r; r = re.exec(rest)) {
    segs.push(r[1] ?? r[2] ?? r[3] ?? Number(r[4]));
  }
  return segs;
}

function lookup(scope: Scope, path: PathSeg[]): unknown {
  // Loop scopes inherit from their parent scope, so the first name is looked up along the chain.
  let cur: unknown = (path[0] as string) in scope ? scope[path[0] as string] : undefined;
  for (const seg of path.slice(1)) {
    if (cur === null || cur === undefined || typeof cur !== 'object') return undefined;
    cur = Object.prototype.hasOwnProperty.call(cur, seg) ? (cur as Record<PathSeg, unknown>)[seg] : undefined;
  }
  return cur;
}

function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v && typeof v === 'object') return Object.keys(v).length > 0;
  return Boolean(v);
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function renderNodes(nodes: Node[], scope: Scope): string {
  let out = '';
  for (const n of nodes) {
    switch (n.t) {
      case 'text':
        out += n.v;
        break;
      case 'expr':
        out += show(lookup(scope, n.path));
        break;
      case 'if':
        out += renderNodes(truthy(lookup(scope, n.path)) !== n.negate ? n.then : n.else, scope);
        break;
      case 'for': {
        const v = lookup(scope, n.path);
        const rows: unknown[][] = n.items ? Object.entries(v && typeof v === 'object' ? v : {}) : Array.isArray(v) ? v.map((x) => [x]) : [];
        for (const row of rows) {
          const inner: Scope = Object.create(scope);
          if (n.vars.length === 2) {
            inner[n.vars[0]!] = row[0];
            inner[n.vars[1]!] = row[1];
          } else inner[n.vars[0]!] = n.items ? row : row[0];
          out += renderNodes(n.body, inner);
        }
        break;
      }
    }
  }
  return out;
}
