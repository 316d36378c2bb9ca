import { isMap, isPair, isScalar, isSeq, visit, type Document, type Node } from 'yaml';
import type { FieldProblem } from './config-problems';

/**
 * Map keys that name a JavaScript object's own machinery. Turned into a plain object, such a key
 * either vanishes (`__proto__` sets the prototype) or breaks the schema classes (`constructor`,
 * `prototype`): the boot crashed with a TypeError. No agent field is named so; they are refused
 * like any other config problem, with their line.
 */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Every reserved key in the document, as `field.path: ...` with the key's line. */
export function reservedKeyProblems(doc: Document, lineOf: (node: Node | null | undefined) => number | undefined): FieldProblem[] {
  const problems: FieldProblem[] = [];
  visit(doc, {
    Pair(_key, pair, path) {
      if (!isScalar(pair.key) || !RESERVED_KEYS.has(String(pair.key.value))) return;
      const name = String(pair.key.value);
      const field = [...fieldPath(path), name].join('.');
      problems.push({ field, line: lineOf(pair.key), message: `"${name}" cannot be a key (a reserved name)` });
    },
  });
  return problems;
}

/** The dotted path of the mapping holding a pair: keys of enclosing pairs, indexes in lists. */
function fieldPath(path: readonly unknown[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < path.length; i++) {
    const node = path[i];
    if (isPair(node) && isScalar(node.key)) out.push(String(node.key.value));
    else if (isSeq(node) && i + 1 < path.length) out.push(String(node.items.indexOf(path[i + 1] as never)));
    else if (isMap(node)) continue;
  }
  return out;
}
