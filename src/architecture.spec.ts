import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import * as ts from 'typescript';

/**
 * The layers of src/, lowest first (README.md, "Layers"). A file may import from its own layer
 * and from the layers below it, never from one above; and no files may import each other in a
 * circle, not even through types only. Every relative import counts: `import`, `import type`,
 * `export … from`, `import('…')`, `require('…')` (the lazy requires that keep the boot small) and
 * `typeof import('…')`.
 *
 * Where this departs from the order the folders suggest, the imports decided it:
 * - `app.tokens.ts` sits at the root of src but is the lowest file of all: the DI tokens (four
 *   symbols, no imports) that telemetry, auth, invocation, tasks and api inject by. It stands with
 *   `common`, not with the app files that share its folder. So does `package-root.ts` (where the
 *   package's files are, from any module), which must sit at the root of src to find it.
 * - Every other file at the root of src is the app: composition (`app.factory.ts`, `app.module.ts`,
 *   `core.module.ts`), entry points (`main.ts`, `cli.ts`) and boot helpers (`boot-*.ts`), which
 *   only the entry points import.
 * - `auth` and `telemetry` share a layer, as do `state` and `llm`, and `tools` and `rate-limit`:
 *   neither of a pair imports the other today, and nothing orders them.
 * - A spec (`*.spec.ts`) may import from any layer: nothing imports a spec, so what it loads never
 *   reaches the code of its layer. Two do, to test a file with the caller it serves:
 *   common/logging/audit-log.spec.ts (the app's Telemetry, for its async context and a real span)
 *   and agents/config/limits.schema.spec.ts (the parsed limits through rate-limit's agentLimitsOf).
 * A folder that is in no layer fails the check: a new top-level folder is placed here first.
 */
const LAYERS: readonly { name: string; holds: (file: string) => boolean }[] = [
  { name: 'common', holds: (f) => f.startsWith('common/') || f === 'app.tokens.ts' || f === 'package-root.ts' },
  { name: 'config', holds: (f) => f.startsWith('config/') },
  { name: 'state, llm', holds: (f) => f.startsWith('state/') || f.startsWith('llm/') },
  { name: 'agents', holds: (f) => f.startsWith('agents/') },
  { name: 'auth, telemetry', holds: (f) => f.startsWith('auth/') || f.startsWith('telemetry/') },
  { name: 'tools, rate-limit', holds: (f) => f.startsWith('tools/') || f.startsWith('rate-limit/') },
  { name: 'invocation', holds: (f) => f.startsWith('invocation/') },
  { name: 'archive', holds: (f) => f.startsWith('archive/') },
  { name: 'tasks', holds: (f) => f.startsWith('tasks/') },
  { name: 'api', holds: (f) => f.startsWith('api/') },
  { name: 'reload', holds: (f) => f.startsWith('reload/') },
  { name: 'app', holds: (f) => !f.includes('/') && f !== 'app.tokens.ts' },
];

/** The relative module names a file imports, in every form that loads or names a module. */
function relativeImportsOf(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined): void => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal(node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) literal(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((name) => name.startsWith('./') || name.startsWith('../'));
}

/** Files by path relative to src/ (posix separators) → their text. */
type Sources = ReadonlyMap<string, string>;

/** The file a relative import names, as TypeScript resolves it; outside src/ is `null`, not found `undefined`. */
function resolve(from: string, name: string, sources: Sources): string | null | undefined {
  const base = posix.normalize(posix.join(posix.dirname(from), name));
  if (base === '..' || base.startsWith('../')) return null;
  const candidates = [base, `${base}.ts`, `${base}/index.ts`, base.replace(/\.js$/, '.ts')];
  return candidates.find((c) => sources.has(c));
}

interface Report {
  /** `a.ts → b.ts` lines: an import that runs up the layers, or a file in no layer. */
  upward: string[];
  /** One `a.ts → b.ts → a.ts` line per group of files that import each other. */
  circles: string[];
  /** Relative imports that name no file of src/ (the graph would silently lose them). */
  unresolved: string[];
}

/** Checks the import graph of `sources` against LAYERS. */
function checkLayers(sources: Sources): Report {
  const report: Report = { upward: [], circles: [], unresolved: [] };
  const layerOf = (file: string): number => LAYERS.findIndex((l) => l.holds(file));
  const graph = new Map<string, string[]>();
  for (const [file, text] of sources) {
    const from = layerOf(file);
    if (from < 0) report.upward.push(`${file} is in no layer: place its folder in LAYERS (src/architecture.spec.ts)`);
    const targets = new Set<string>();
    for (const name of relativeImportsOf(file, text)) {
      const target = resolve(file, name, sources);
      if (target === null) continue;
      if (target === undefined) {
        report.unresolved.push(`${file} → '${name}'`);
        continue;
      }
      targets.add(target);
      const to = layerOf(target);
      if (from >= 0 && to > from && !file.endsWith('.spec.ts')) report.upward.push(`${file} (${LAYERS[from]!.name}) → ${target} (${LAYERS[to]!.name})`);
    }
    graph.set(file, [...targets].sort());
  }
  report.circles = circlesOf(graph);
  return report;
}

/**
 * Each strongly connected group of files (Tarjan), reported as the shortest circle through its
 * first file, with the group's size when the group is larger than that circle.
 */
function circlesOf(graph: ReadonlyMap<string, string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)?.includes(v)) groups.push(group.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);

  return groups.map((group) => {
    const members = new Set(group);
    const start = group[0]!;
    // Breadth first from the group's first file back to it, inside the group.
    const cameFrom = new Map<string, string>();
    const queue = [start];
    for (let i = 0; i < queue.length && !cameFrom.has(start); i++) {
      for (const w of graph.get(queue[i]!) ?? []) {
        if (!members.has(w) || cameFrom.has(w)) continue;
        cameFrom.set(w, queue[i]!);
        queue.push(w);
      }
    }
    const path = [start];
    for (let at = cameFrom.get(start)!; at !== start; at = cameFrom.get(at)!) path.unshift(at);
    path.unshift(start);
    const circle = path.join(' → ');
    return group.length > path.length - 1 ? `${circle} (one circle of a group of ${group.length} files: ${group.join(', ')})` : circle;
  });
}

function sourcesUnder(root: string): Map<string, string> {
  const sources = new Map<string, string>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    sources.set(relative(root, path).split(sep).join('/'), readFileSync(path, 'utf8'));
  }
  return sources;
}

describe('layers of src/', () => {
  it('no import runs up the layers, and no files import each other in a circle', () => {
    const sources = sourcesUnder(__dirname);
    expect(sources.size).toBeGreaterThan(200);
    const report = checkLayers(sources);
    expect(report).toEqual({ upward: [], circles: [], unresolved: [] });
  });

  it('reads every form of a relative import, and nothing else', () => {
    const text = [
      "import { a } from './a';",
      "import type { B } from '../b';",
      "export { c } from './c';",
      "export * from './d';",
      "const e = require('./e') as typeof import('./e-type');",
      "const f = () => import('./f');",
      "import g = require('./g');",
      "import { h } from 'h-package';",
      "// import { i } from './in-a-comment';",
      'const j = "import { j } from \'./in-a-string\'";',
    ].join('\n');
    expect(relativeImportsOf('x.ts', text)).toEqual(['./a', '../b', './c', './d', './e', './e-type', './f', './g']);
  });

  it('names an upward import, a circle, a file in no layer and an import it cannot resolve; a spec imports from any layer', () => {
    const sources = new Map([
      ['common/log.ts', "import type { Task } from '../tasks/task';\nexport const log = 1;"],
      ['tasks/task.ts', "export { step } from './step';\nexport interface Task { id: string }"],
      ['tasks/step.ts', "export const step = () => require('./run') as typeof import('./run');"],
      ['tasks/run.ts', "export const run = () => import('./task');"],
      ['api/route.ts', "import { log } from '../common/log';\nimport type { Task } from '../tasks/task';"],
      ['widgets/knob.ts', "import { gone } from './gone';"],
      ['common/log.spec.ts', "import { log } from './log';\nimport { run } from '../tasks/run';"],
    ]);
    expect(checkLayers(sources)).toEqual({
      upward: ['common/log.ts (common) → tasks/task.ts (tasks)', 'widgets/knob.ts is in no layer: place its folder in LAYERS (src/architecture.spec.ts)'],
      circles: ['tasks/run.ts → tasks/task.ts → tasks/step.ts → tasks/run.ts'],
      unresolved: ["widgets/knob.ts → './gone'"],
    });
  });
});

/**
 * The files that may hold the state store itself (README.md, "Layers"): the store's own layer and
 * the composition that creates it; in src/tasks the one writer and the one reader beside it, and
 * the writer of the stream log (appends only: it reads through the reader); the rate limiter,
 * which keeps its windows on the store's Redis connection. Every other service and controller
 * reads through TaskReaderService and writes through TaskWriterService, so who may read what is
 * decided in one place. A spec may hold a store (it builds the services it tests).
 */
const STORE_HOLDERS: readonly string[] = [
  'app.factory.ts',
  'core.module.ts',
  'tasks/writer/task-writer.service.ts',
  'tasks/writer/task-reader.service.ts',
  'tasks/events/stream-event-writer.service.ts',
  'rate-limit/rate-limiter.factory.ts',
];

/** The files outside state/ (specs aside) that import the name `StateStore` from state/state-store.ts. */
function storeHoldersOf(sources: Sources): string[] {
  const holders: string[] = [];
  for (const [file, text] of sources) {
    if (file.startsWith('state/') || file.endsWith('.spec.ts')) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    const holds = source.statements.some(
      (s) =>
        ts.isImportDeclaration(s) &&
        ts.isStringLiteral(s.moduleSpecifier) &&
        resolve(file, s.moduleSpecifier.text, sources) === 'state/state-store.ts' &&
        !!s.importClause?.namedBindings &&
        ts.isNamedImports(s.importClause.namedBindings) &&
        s.importClause.namedBindings.elements.some((e) => (e.propertyName ?? e.name).text === 'StateStore'),
    );
    if (holds) holders.push(file);
  }
  return holders.sort();
}

describe('the state store, held by few', () => {
  it('only the writer, the reader, the stream log writer, the rate limiter and the composition hold the store', () => {
    expect(storeHoldersOf(sourcesUnder(__dirname))).toEqual([...STORE_HOLDERS].sort());
  });

  it('finds a service that imports the store, as a type too, and not one that imports only its entities', () => {
    const sources = new Map([
      ['state/state-store.ts', 'export abstract class StateStore {}\nexport interface StreamEvent { n: number }'],
      ['tasks/reads.service.ts', "import { StateStore } from '../state/state-store';"],
      ['tasks/typed.ts', "import type { StateStore as Store } from '../state/state-store';"],
      ['tasks/events.ts', "import type { StreamEvent } from '../state/state-store';"],
      ['tasks/reads.service.spec.ts', "import { StateStore } from '../state/state-store';"],
    ]);
    expect(storeHoldersOf(sources)).toEqual(['tasks/reads.service.ts', 'tasks/typed.ts']);
  });
});
