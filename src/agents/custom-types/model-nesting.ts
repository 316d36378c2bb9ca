import { MAX_JSON_DEPTH } from '../../common/http/json-depth';
import type { TypeDecl, TypeNode } from './model-types';
import { referencedNames } from './model-types';
import { SKA_TYPES } from './ska-types';

type Problem = { line: number; message: string };

/** The deepest chain below a model: how many objects and arrays deep its values go, and the model it goes through. */
type Depth = { depth: number; via?: string };

/**
 * The models of a types file that cannot be served: recursive ones (their JSON Schema has no end),
 * and ones whose values nest deeper than a JSON body may (MAX_JSON_DEPTH; no request could carry
 * them, and every later step, schema and validation alike, recurses per level). The models are
 * walked with an explicit stack, so a chain of any length is read without exhausting the call
 * stack. `decls`: the file's own models and Enums, in file order; `lineOf`: a class's line.
 */
export function modelNestingProblems(decls: ReadonlyMap<string, TypeDecl>, lineOf: (name: string) => number): Problem[] {
  const problems: Problem[] = [];
  const refsOf = (name: string): string[] => {
    const decl = decls.get(name)!;
    return decl.kind === 'model' ? decl.fields.flatMap((f) => referencedNames(f.type)).filter((n) => decls.has(n)) : [];
  };
  const done = new Map<string, Depth>();
  // A model of the file counts once walked (one still on the path is a cycle, reported below);
  // `via` points only at models walked before, so following it always ends.
  const refDepth = (name: string): Depth => {
    if (!decls.has(name)) return { depth: skaDepth(name) };
    const d = done.get(name);
    return d ? { depth: d.depth, via: name } : { depth: 0 };
  };
  const onPath = new Map<string, number>();
  const path: { name: string; refs: string[]; next: number }[] = [];
  const enter = (name: string) => {
    onPath.set(name, path.length);
    path.push({ name, refs: refsOf(name), next: 0 });
  };
  for (const root of decls.keys()) {
    if (done.has(root)) continue;
    enter(root);
    while (path.length) {
      const top = path.at(-1)!;
      const ref = top.refs[top.next++];
      if (ref === undefined) {
        path.pop();
        onPath.delete(top.name);
        done.set(top.name, declDepth(decls.get(top.name)!, refDepth));
      } else if (onPath.has(ref)) {
        const cycle = [...path.slice(onPath.get(ref)).map((f) => f.name), ref];
        problems.push({ line: lineOf(cycle[0]!), message: `class ${cycle[0]}: recursive models are not supported (${cycle.join(' → ')})` });
      } else if (!done.has(ref)) enter(ref);
    }
  }

  const tooDeep = [...done].filter(([, d]) => d.depth > MAX_JSON_DEPTH).map(([name]) => name);
  // The outermost ones only: a chain is one problem, at the class it starts from.
  const inner = new Set(tooDeep.flatMap(refsOf));
  for (const name of tooDeep.filter((n) => !inner.has(n))) {
    const chain = [name];
    for (let via = done.get(name)!.via; via !== undefined; via = done.get(via)?.via) chain.push(via);
    const shown = chain.length > 4 ? [...chain.slice(0, 3), '…', chain.at(-1)!] : chain;
    problems.push({
      line: lineOf(name),
      message: `class ${name}: its values nest ${done.get(name)!.depth} levels deep${chain.length > 1 ? ` (${shown.join(' → ')})` : ''}, deeper than the ${MAX_JSON_DEPTH} levels a JSON body may have`,
    });
  }
  return problems;
}

function declDepth(decl: TypeDecl, refDepth: (name: string) => Depth): Depth {
  if (decl.kind === 'enum') return { depth: 0 };
  let deepest: Depth = { depth: 0 };
  for (const f of decl.fields) {
    const d = typeDepth(f.type, refDepth);
    if (d.depth > deepest.depth) deepest = d;
  }
  return { depth: deepest.depth + 1, via: deepest.via };
}

function typeDepth(t: TypeNode, refDepth: (name: string) => Depth): Depth {
  switch (t.k) {
    case 'list':
    case 'dict': {
      const d = typeDepth(t.k === 'list' ? t.item : t.value, refDepth);
      return { depth: d.depth + 1, via: d.via };
    }
    case 'union':
      return t.options.map((o) => typeDepth(o, refDepth)).reduce((a, b) => (b.depth > a.depth ? b : a), { depth: 0 });
    case 'ref':
      return refDepth(t.name);
    default:
      return { depth: 0 };
  }
}

/** Upstream's own models (sk_agents.ska_types): few, shallow, none recursive. */
function skaDepth(name: string): number {
  const decl = SKA_TYPES.get(name);
  return decl ? declDepth(decl, (n) => ({ depth: skaDepth(n) })).depth : 0;
}
