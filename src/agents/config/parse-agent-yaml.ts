import { readFileSync } from 'node:fs';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type YAMLError } from 'yaml';
import type { FieldProblem } from './config-problems';
import { reservedKeyProblems } from './reserved-keys';

/** The 1-based line of a dotted field path, or of its nearest ancestor present in the file. */
export type LocateField = (field: string) => number | undefined;

export type ParsedAgentYaml = { raw: Record<string, unknown>; locate: LocateField; problems: [] } | { raw?: undefined; problems: FieldProblem[] };

/**
 * Reads one agent file into a plain object, and keeps the document so that every problem can name
 * its line. Syntax errors are reported with their line and column.
 */
export function parseAgentYaml(file: string): ParsedAgentYaml {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { problems: [{ field: '', message: `cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` }] };
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { keepSourceTokens: true, lineCounter });
  if (doc.errors.length) return { problems: syntaxProblems(doc.errors) };
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) {
    return { problems: [{ field: '', message: 'the file is empty (expected an agent config: apiVersion, name, version, spec, ...)' }] };
  }
  if (!isMap(doc.contents)) {
    const what = isScalar(doc.contents) ? 'a single value' : 'a list';
    return { problems: [{ field: '', message: `the file must hold one YAML mapping (an agent config), not ${what}` }] };
  }
  const lineOf = (node: Node | null | undefined) => (node?.range ? lineCounter.linePos(node.range[0]).line : undefined);
  const reserved = reservedKeyProblems(doc, lineOf);
  if (reserved.length) return { problems: reserved };
  const raw = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  // Python's str(config.version) keeps `0.1` as "0.1"; reading the scalar's source text does the
  // same and also keeps `1.0` as "1.0" (a JS number would print "1"). Quoted versions are strings
  // already; anything else (true, a list) is left for the schema to refuse.
  const version = doc.contents.get('version', true);
  if (isScalar(version) && typeof version.value === 'number') {
    const source = (version.srcToken as { source?: unknown } | undefined)?.source;
    raw.version = version.type === 'PLAIN' && typeof source === 'string' && source.trim() ? source.trim() : String(version.value);
  }
  const root = doc.contents;
  return { raw, locate: (field) => locate(root, field.split('.'), lineOf), problems: [] };
}

/**
 * Walks a dotted path (`spec.agents.0.model`) down the document. A key may itself contain dots (a
 * tool name such as `plugin.fn`), so at each mapping the longest run of segments that is a key wins.
 * Points at the key of a mapping entry, so an unknown or wrong field shows the line that names it.
 */
function locate(root: Node, segments: string[], lineOf: (n: Node | null | undefined) => number | undefined): number | undefined {
  let node: unknown = root;
  let line = lineOf(root);
  let i = 0;
  while (i < segments.length) {
    if (isMap(node)) {
      const map = node;
      let found = false;
      for (let j = segments.length; j > i && !found; j--) {
        const key = segments.slice(i, j).join('.');
        const pair = map.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
        if (pair) {
          line = lineOf(pair.key as Node) ?? line;
          node = pair.value;
          i = j;
          found = true;
        }
      }
      if (!found) return line;
    } else if (isSeq(node) && /^\d+$/.test(segments[i]!)) {
      const item = node.items[Number(segments[i])] as Node | undefined;
      if (!item) return line;
      line = lineOf(item) ?? line;
      node = item;
      i++;
    } else return line;
  }
  return line;
}

function syntaxProblems(errors: YAMLError[]): FieldProblem[] {
  const seen = new Set<string>();
  const out: FieldProblem[] = [];
  for (const e of errors) {
    // One mistake often yields several errors at the same spot; the first one explains it.
    const at = e.linePos?.[0];
    const key = at ? `${at.line}:${at.col}` : '';
    if (seen.has(key)) continue;
    seen.add(key);
    const text =
      e.code === 'MULTIPLE_DOCS'
        ? 'the file holds more than one YAML document (---): put one agent per file'
        : e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    out.push({ field: '', line: at?.line, column: at?.col, message: `YAML syntax error: ${text}` });
  }
  return out;
}
