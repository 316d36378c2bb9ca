import { modelNestingProblems } from './model-nesting';
import type { LiteralValue, ModelDecl, ModelField, TypeDecl, TypeNode } from './model-types';
import { parsePythonExpression, parsePythonModule, PyClassDef, PyExpr, PyModuleSource } from './python-source';
import { SKA_TYPES, SKA_TYPES_MODULE } from './ska-types';

/**
 * Upstream's `custom_types.py`, read as text (never run): pydantic `BaseModel` / `KernelBaseModel`
 * classes (and `Enum` classes) become type declarations. What is read:
 *
 * - imports (any module; a name only matters where it is used);
 * - classes deriving from `BaseModel`, `KernelBaseModel`, upstream's `sk_agents.ska_types` models
 *   (`BaseInput`, `HistoryMessage`, ...) or other models of the file; their docstring;
 * - fields `name: annotation`, `name: annotation = literal` and
 *   `name: annotation = Field(default | ..., default=, default_factory=list|dict, description=, title=, examples=)`;
 * - annotations `str`, `int`, `float`, `bool`, `None`, `Any`, `list[X]`/`List[X]`,
 *   `dict[str, X]`/`Dict[str, X]`, `Optional[X]`, `Union[X, Y]`, `X | Y`, `Literal[...]`, models and
 *   Enums of the file (also quoted, as forward references);
 * - `Enum` classes whose members are string or integer literals.
 *
 * Anything else (methods, validators, decorators, `model_config`, other annotations, non-literal
 * defaults, module-level code) is a problem with its line: the whole file must be understood,
 * as Python would import it whole.
 *
 * A class defined again (two upstream files merged into one) is read as Python runs the file:
 * the name means the later definition.
 */
export interface PythonTypesFile {
  /** The file's models and Enums, plus upstream's models they use. Complete only without problems. */
  registry: Map<string, TypeDecl>;
  /** The line of each class of the file (of its later definition, for one defined again). */
  lines: Map<string, number>;
  problems: { line: number; message: string }[];
  /** Each class defined again, with the line of the definition before (for a warning). */
  redefinitions: { name: string; line: number; earlier: number }[];
}

export const SUPPORTED_ANNOTATIONS =
  'str, int, float, bool, None, Any, list[...], dict[str, ...], Optional[...], Union[...], X | Y, Literal[...], and models or Enums of this file or of sk_agents.ska_types';

const FIELD_KEYWORDS = ['default', 'default_factory', 'description', 'title', 'examples'];

type Resolved =
  | { kind: 'local'; name: string }
  | { kind: 'ska'; name: string }
  | { kind: 'typing'; name: string }
  | { kind: 'builtin'; name: string }
  | { kind: 'pydantic'; name: string }
  | { kind: 'kernel'; name: string }
  | { kind: 'enum'; name: string }
  | { kind: 'module'; module: string }
  | { kind: 'imported'; module: string; name: string }
  | { kind: 'unknown'; name: string };

const BUILTIN_NAMES = new Set(['str', 'int', 'float', 'bool', 'list', 'dict', 'object', 'tuple', 'set', 'frozenset', 'bytes', 'complex', 'type']);

export function readPythonTypes(text: string): PythonTypesFile {
  return new PythonTypesReader(parsePythonModule(text)).read();
}

class PythonTypesReader {
  private readonly problems: { line: number; message: string }[] = [];
  private readonly classes = new Map<string, PyClassDef>();
  private readonly imports = new Map<string, { module: string; name?: string; line: number }>();
  private readonly kinds = new Map<string, 'model' | 'enum' | undefined>();
  private readonly decls = new Map<string, TypeDecl>();
  private readonly building = new Set<string>();
  /** Every definition of each class name, in file order. */
  private readonly definitions = new Map<string, PyClassDef[]>();

  constructor(private readonly src: PyModuleSource) {}

  read(): PythonTypesFile {
    this.problems.push(...this.src.problems);
    for (const imp of this.src.imports) {
      if (imp.local === '*') this.problem(imp.line, `"from ${imp.module} import *" is not supported: import the names the types use`);
      else this.imports.set(imp.local, imp);
    }
    for (const o of this.src.others) {
      this.problem(
        o.line,
        `module-level statement "${o.what}" is not supported: a custom types file may hold only imports, docstrings, model classes and Enum classes`,
      );
    }
    const redefinitions: PythonTypesFile['redefinitions'] = [];
    for (const c of this.src.classes) {
      const all = this.definitions.get(c.name) ?? [];
      if (all.length) redefinitions.push({ name: c.name, line: c.line, earlier: all.at(-1)!.line });
      this.definitions.set(c.name, [...all, c]);
      // Python binds the name anew: once the file is read, it means the later class.
      this.classes.set(c.name, c);
    }
    this.checkEarlyUses();
    for (const c of this.classes.values()) this.decl(c.name);
    this.problems.push(...modelNestingProblems(this.decls, (name) => this.classes.get(name)!.line));
    const registry = new Map<string, TypeDecl>(SKA_TYPES);
    for (const [name, d] of this.decls) registry.set(name, d);
    this.problems.sort((a, b) => a.line - b.line);
    return { registry, lines: new Map([...this.classes].map(([n, c]) => [n, c.line])), problems: dedupe(this.problems), redefinitions };
  }

  private problem(line: number, message: string): void {
    this.problems.push({ line, message });
  }

  // ---- names

  private resolve(e: PyExpr): Resolved | undefined {
    if (e.kind === 'name') {
      if (this.classes.has(e.id)) return { kind: 'local', name: e.id };
      const imp = this.imports.get(e.id);
      if (imp) return imp.name === undefined ? { kind: 'module', module: imp.module } : fromModule(imp.module, imp.name);
      if (BUILTIN_NAMES.has(e.id)) return { kind: 'builtin', name: e.id };
      return { kind: 'unknown', name: e.id };
    }
    if (e.kind === 'attribute') {
      const base = this.resolve(e.value);
      if (base?.kind === 'module') return fromModule(base.module, e.attr);
      if (base?.kind === 'local') return undefined;
      return { kind: 'unknown', name: this.src.textOf(e) };
    }
    return undefined;
  }

  // ---- classes

  private kindOf(name: string, line: number): 'model' | 'enum' | undefined {
    if (this.kinds.has(name)) return this.kinds.get(name);
    if (this.building.has(name)) {
      this.problem(line, `class ${name} derives from itself`);
      return undefined;
    }
    this.building.add(name);
    const c = this.classes.get(name)!;
    let kind: 'model' | 'enum' | undefined;
    let ok = true;
    let model = false;
    let enumBase = false;
    let mixin = false;
    for (const b of c.bases) {
      const r = this.resolve(b);
      if ((r?.kind === 'pydantic' && r.name === 'BaseModel') || (r?.kind === 'kernel' && r.name === 'KernelBaseModel')) model = true;
      else if (r?.kind === 'enum' && ['Enum', 'StrEnum', 'IntEnum'].includes(r.name)) enumBase = true;
      else if (r?.kind === 'builtin' && (r.name === 'str' || r.name === 'int')) mixin = true;
      else if (r?.kind === 'ska' && SKA_TYPES.get(r.name)?.kind === 'model') model = true;
      else if (r?.kind === 'local') {
        const k = this.kindOf(r.name, c.line);
        if (k === 'enum') {
          this.problem(c.line, `class ${name}: deriving from the Enum ${r.name} is not supported`);
          ok = false;
        } else if (k) model = true;
        else ok = false;
      } else {
        this.problem(
          c.line,
          `class ${name}: the base class "${this.src.textOf(b)}"${importedFrom(r)} is not supported: a model derives from BaseModel, KernelBaseModel, a model of sk_agents.ska_types or another model of this file; an Enum from Enum`,
        );
        ok = false;
      }
    }
    if (!c.bases.length) this.problem(c.line, `class ${name} is not a model: a model derives from BaseModel or KernelBaseModel`);
    else if (model && enumBase) this.problem(c.line, `class ${name} derives from both a model and an Enum`);
    else if (mixin && !enumBase) this.problem(c.line, `class ${name}: deriving from str or int is supported only for an Enum`);
    else if (ok) kind = model ? 'model' : enumBase ? 'enum' : undefined;
    for (const k of c.keywords) this.problem(c.line, `class ${name}: the class keyword "${k.name}=" is not supported (model settings are not read)`);
    for (const d of c.decorators) this.problem(d.line, `class ${name}: the decorator "${d.what}" is not supported`);
    this.building.delete(name);
    this.kinds.set(name, kind);
    return kind;
  }

  private decl(name: string): TypeDecl | undefined {
    if (this.decls.has(name)) return this.decls.get(name);
    const c = this.classes.get(name)!;
    const kind = this.kindOf(name, c.line);
    if (!kind) return undefined;
    const decl = kind === 'enum' ? this.enumDecl(c) : this.modelDecl(c);
    this.decls.set(name, decl);
    return decl;
  }

  private enumDecl(c: PyClassDef): TypeDecl {
    const values: (string | number)[] = [];
    for (const s of c.body) {
      if (s.kind === 'assign') {
        const v = s.value;
        const value =
          v.kind === 'string' && !v.prefix
            ? v.value
            : v.kind === 'number' && Number.isInteger(v.value)
              ? v.value
              : v.kind === 'negative' && v.operand.kind === 'number'
                ? -v.operand.value
                : undefined;
        if (value === undefined)
          this.problem(s.line, `Enum ${c.name}, member ${s.name}: the value "${this.src.textOf(v)}" is not supported (use a string or integer literal)`);
        else values.push(value);
      } else if (s.kind === 'field') this.problem(s.line, `Enum ${c.name}: the annotated member "${s.name}" is not supported (members are NAME = "value")`);
      else this.problem(s.line, `Enum ${c.name}: "${s.what}" is not supported${otherHint(s.what)}`);
    }
    return { kind: 'enum', name: c.name, ...(c.docstring ? { description: c.docstring } : {}), values };
  }

  private modelDecl(c: PyClassDef): ModelDecl {
    // pydantic collects fields along the reversed MRO: the last base's fields come first, and a
    // field redefined later keeps its first position.
    const fields = new Map<string, ModelField>();
    for (const b of [...c.bases].reverse()) {
      const r = this.resolve(b);
      const parent = r?.kind === 'local' ? this.decl(r.name) : r?.kind === 'ska' ? SKA_TYPES.get(r.name) : undefined;
      if (parent?.kind === 'model') for (const f of parent.fields) fields.set(f.name, f);
    }
    for (const s of c.body) {
      if (s.kind === 'field') {
        const where = `class ${c.name}, field "${s.name}"`;
        if (s.name.startsWith('_')) {
          this.problem(s.line, `${where}: private attributes (a leading underscore) are not supported`);
          continue;
        }
        if (s.name === 'model_config') {
          this.problem(s.line, `${where}: model settings (model_config) are not supported`);
          continue;
        }
        const type = this.typeOf(s.annotation, where);
        const value = this.fieldValue(s.value, where);
        if (type && value) fields.set(s.name, { name: s.name, type, ...value });
      } else if (s.kind === 'assign') {
        if (s.name === 'model_config') this.problem(s.line, `class ${c.name}: model settings (model_config = ...) are not supported`);
        else this.problem(s.line, `class ${c.name}: "${s.name} = ..." has no type annotation (pydantic fields are annotated: ${s.name}: str = ...)`);
      } else this.problem(s.line, `class ${c.name}: "${s.what}" is not supported${otherHint(s.what)}`);
    }
    return { kind: 'model', name: c.name, ...(c.docstring ? { description: c.docstring } : {}), fields: [...fields.values()] };
  }

  // ---- annotations

  private typeOf(e: PyExpr, where: string): TypeNode | undefined {
    const unsupported = (detail = ''): undefined => {
      this.problem(e.line, `${where}: the type "${this.src.textOf(e)}"${detail} is not supported (supported: ${SUPPORTED_ANNOTATIONS})`);
      return undefined;
    };
    switch (e.kind) {
      case 'constant':
        return e.value === null ? { k: 'none' } : unsupported();
      case 'string': {
        if (e.prefix) return unsupported();
        const inner = parsePythonExpression(e.value, e.line);
        if (!inner || inner.kind === 'string') return unsupported();
        // The quoted text is the construct to name in messages.
        const parsed = this.typeOfQuoted(inner, e.value, where);
        return parsed;
      }
      case 'union': {
        const left = this.typeOf(e.left, where);
        const right = this.typeOf(e.right, where);
        return left && right ? union([left, right]) : undefined;
      }
      case 'name':
      case 'attribute': {
        const r = this.resolve(e);
        if (!r) return unsupported();
        if (r.kind === 'builtin' && ['str', 'int', 'float', 'bool'].includes(r.name)) return { k: r.name as 'str' };
        if ((r.kind === 'builtin' && r.name === 'list') || (r.kind === 'typing' && r.name === 'List')) return { k: 'list', item: { k: 'any' } };
        if ((r.kind === 'builtin' && r.name === 'dict') || (r.kind === 'typing' && r.name === 'Dict')) return { k: 'dict', value: { k: 'any' } };
        if (r.kind === 'typing' && r.name === 'Any') return { k: 'any' };
        if (r.kind === 'local') return this.kindOf(r.name, e.line) ? { k: 'ref', name: r.name } : undefined;
        if (r.kind === 'ska') return { k: 'ref', name: r.name };
        return unsupported(r.kind === 'unknown' && e.kind === 'name' ? ' (not defined or imported in this file)' : importedFrom(r));
      }
      case 'subscript': {
        const r = this.resolve(e.value);
        const args = e.index;
        const name = r && (r.kind === 'builtin' || r.kind === 'typing') ? r.name : undefined;
        const arity = (n: number) => args.length === n || (unsupported(` (${name} takes ${n} type${n > 1 ? 's' : ''})`), false);
        switch (name) {
          case 'list':
          case 'List': {
            if (!arity(1)) return undefined;
            const item = this.typeOf(args[0]!, where);
            return item && { k: 'list', item };
          }
          case 'dict':
          case 'Dict': {
            if (!arity(2)) return undefined;
            const key = this.typeOf(args[0]!, where);
            const value = this.typeOf(args[1]!, where);
            if (key && key.k !== 'str') return unsupported(' (JSON object keys are strings: use dict[str, ...])');
            return key && value && { k: 'dict', value };
          }
          case 'Optional': {
            if (!arity(1)) return undefined;
            const inner = this.typeOf(args[0]!, where);
            return inner && union([inner, { k: 'none' }]);
          }
          case 'Union': {
            const options = args.map((a) => this.typeOf(a, where));
            if (!options.length) return unsupported();
            return options.every(Boolean) ? union(options as TypeNode[]) : undefined;
          }
          case 'Literal': {
            const values: LiteralValue[] = [];
            for (const a of args) {
              const v = literalValue(a);
              if (v === undefined || (typeof v === 'object' && v !== null)) return unsupported(' (Literal takes strings, numbers, booleans and None)');
              values.push(v as LiteralValue);
            }
            return values.length ? { k: 'literal', values } : unsupported();
          }
        }
        return unsupported();
      }
      default:
        return unsupported();
    }
  }

  private typeOfQuoted(inner: PyExpr, text: string, where: string): TypeNode | undefined {
    const before = this.problems.length;
    const t = this.typeOf(inner, where);
    // Problems inside a quoted annotation quote the string's own text.
    for (const p of this.problems.slice(before)) p.message = p.message.replace(/the type "[^"]*"/, `the type "${text}"`);
    return t;
  }

  // ---- defaults and Field(...)

  private fieldValue(e: PyExpr | undefined, where: string): Pick<ModelField, 'required' | 'default' | 'description' | 'title' | 'examples'> | undefined {
    if (!e || e.kind === 'ellipsis') return { required: true };
    if (e.kind === 'call' && this.isField(e.func)) {
      const out: Pick<ModelField, 'required' | 'default' | 'description' | 'title' | 'examples'> = { required: true };
      let ok = true;
      const bad = (message: string) => {
        this.problem(e.line, `${where}: ${message}`);
        ok = false;
      };
      const setDefault = (v: PyExpr) => {
        if (v.kind === 'ellipsis') return;
        const value = this.literalOf(v);
        if (value === undefined) bad(`the default "${this.src.textOf(v)}" is not a literal (use a string, number, boolean, None, or a list or dict of them)`);
        else Object.assign(out, { required: false, default: value });
      };
      if (e.args.length > 1) bad(`Field() takes at most one positional argument (the default), got "${this.src.textOf(e)}"`);
      if (e.args[0]) setDefault(e.args[0]);
      for (const k of e.keywords) {
        if (k.name === 'default') setDefault(k.value);
        else if (k.name === 'default_factory') {
          const r = this.resolve(k.value);
          if (r?.kind === 'builtin' && (r.name === 'list' || r.name === 'dict')) Object.assign(out, { required: false, default: r.name === 'list' ? [] : {} });
          else bad(`Field(default_factory=${this.src.textOf(k.value)}) is not supported (only list or dict)`);
        } else if (k.name === 'description' || k.name === 'title') {
          if (k.value.kind === 'string' && !k.value.prefix) out[k.name] = k.value.value;
          else bad(`Field(${k.name}=...) must be a string literal`);
        } else if (k.name === 'examples') {
          const v = this.literalOf(k.value);
          if (Array.isArray(v)) out.examples = v;
          else bad('Field(examples=...) must be a list literal');
        } else bad(`Field(${k.name}=...) is not supported (supported: ${FIELD_KEYWORDS.join(', ')})`);
      }
      if (e.keywords.some((k) => k.name === 'default') && e.keywords.some((k) => k.name === 'default_factory'))
        bad('Field() takes default or default_factory, not both');
      return ok ? out : undefined;
    }
    const value = this.literalOf(e);
    if (value === undefined) {
      this.problem(
        e.line,
        `${where}: the default "${this.src.textOf(e)}" is not a literal (use a string, number, boolean, None, a list or dict of them, or Field(...))`,
      );
      return undefined;
    }
    return { required: false, default: value };
  }

  private isField(e: PyExpr): boolean {
    const r = this.resolve(e);
    return r?.kind === 'pydantic' && r.name === 'Field';
  }

  /** A JSON value from a literal expression (also an Enum member of the file: its value). */
  private literalOf(e: PyExpr): unknown {
    if (e.kind === 'attribute' && e.value.kind === 'name' && this.classes.has(e.value.id)) {
      const c = this.classes.get(e.value.id)!;
      const member = c.body.find((s) => s.kind === 'assign' && s.name === e.attr);
      return member?.kind === 'assign' && this.kindOf(c.name, e.line) === 'enum' ? literalValue(member.value) : undefined;
    }
    if (e.kind === 'list' || e.kind === 'tuple') {
      const items = e.items.map((i) => this.literalOf(i));
      return items.every((i) => i !== undefined) ? items : undefined;
    }
    if (e.kind === 'dict') {
      const out: Record<string, unknown> = {};
      for (const { key, value } of e.entries) {
        const v = this.literalOf(value);
        if (key.kind !== 'string' || key.prefix || v === undefined) return undefined;
        out[key.value] = v;
      }
      return out;
    }
    return literalValue(e);
  }

  // ---- a class defined again

  /**
   * A class statement reads its bases and its unquoted annotations and defaults as it runs, so a
   * class between two definitions of a name uses the earlier one (a quoted annotation is resolved
   * once the file is read: the later one). Here one name is one model: such a use is refused,
   * with both lines, unless the two definitions are the same (as when two upstream files merged
   * both define `Agent`).
   */
  private checkEarlyUses(): void {
    for (const c of this.src.classes) {
      const uses = [
        ...c.bases.map((e) => ({ e, where: `class ${c.name}, base class "${this.src.textOf(e)}"` })),
        ...c.body.flatMap((s) =>
          s.kind === 'field' ? [s.annotation, ...(s.value ? [s.value] : [])].map((e) => ({ e, where: `class ${c.name}, field "${s.name}"` })) : [],
        ),
      ];
      for (const { e, where } of uses) {
        for (const n of evaluatedNames(e)) {
          const all = this.definitions.get(n.id) ?? [];
          const bound = all.filter((d) => d.line < c.line).at(-1);
          const last = all.at(-1);
          if (!bound || bound === last || this.sameClass(bound, last!)) continue;
          this.problem(
            n.line,
            `${where}: "${n.id}" here is the class of line ${bound.line}, which line ${last!.line} defines again differently; Python keeps the earlier class for this use, and one name is one model here: rename one of the two classes`,
          );
        }
      }
    }
  }

  /** Two definitions alike but for where they stand. */
  private sameClass(a: PyClassDef, b: PyClassDef): boolean {
    const text = (e: PyExpr) => this.src.textOf(e);
    const shape = (c: PyClassDef) =>
      JSON.stringify([
        c.bases.map(text),
        c.keywords.map((k) => [k.name, text(k.value)]),
        c.decorators.map((d) => d.what),
        c.docstring ?? null,
        c.body.map((s) =>
          s.kind === 'other' ? [s.what] : s.kind === 'field' ? [s.name, text(s.annotation), s.value ? text(s.value) : null] : [s.name, text(s.value)],
        ),
      ]);
    return shape(a) === shape(b);
  }
}

/** The names Python reads when it evaluates an expression (a quoted annotation is read later). */
function evaluatedNames(e: PyExpr): { id: string; line: number }[] {
  switch (e.kind) {
    case 'name':
      return [{ id: e.id, line: e.line }];
    case 'attribute':
      return evaluatedNames(e.value);
    case 'subscript':
      return [e.value, ...e.index].flatMap(evaluatedNames);
    case 'call':
      return [e.func, ...e.args, ...e.keywords.map((k) => k.value)].flatMap(evaluatedNames);
    case 'union':
      return [e.left, e.right].flatMap(evaluatedNames);
    case 'list':
    case 'tuple':
    case 'set':
      return e.items.flatMap(evaluatedNames);
    case 'dict':
      return e.entries.flatMap((x) => [x.key, x.value]).flatMap(evaluatedNames);
    case 'negative':
      return evaluatedNames(e.operand);
    default:
      return [];
  }
}

function fromModule(module: string, name: string): Resolved {
  if (module === 'typing' || module === 'typing_extensions') return { kind: 'typing', name };
  if (module === 'pydantic' || module === 'pydantic.main' || module === 'pydantic.fields') return { kind: 'pydantic', name };
  if (module === 'semantic_kernel.kernel_pydantic' || module === 'semantic_kernel') return { kind: 'kernel', name };
  if (module === 'enum') return { kind: 'enum', name };
  if (module === SKA_TYPES_MODULE && SKA_TYPES.has(name)) return { kind: 'ska', name };
  if (module === 'builtins') return { kind: 'builtin', name };
  return { kind: 'imported', module, name };
}

function importedFrom(r: Resolved | undefined): string {
  if (!r) return '';
  if (r.kind === 'imported') return ` (imported from ${r.module})`;
  if (r.kind === 'typing') return ' (from typing)';
  if (r.kind === 'pydantic') return ' (from pydantic)';
  if (r.kind === 'enum') return ' (from enum)';
  return '';
}

function otherHint(what: string): string {
  if (what.startsWith('def ') || what.startsWith('async def ')) return ': methods and validators cannot be read without running Python';
  if (what.startsWith('@')) return ': decorators (validators, computed fields) cannot be read without running Python';
  if (what.startsWith('class ')) return ': nested classes are not read (define the class at the top level)';
  return '';
}

function literalValue(e: PyExpr): unknown {
  switch (e.kind) {
    case 'string':
      return e.prefix ? undefined : e.value;
    case 'number':
      return e.value;
    case 'constant':
      return e.value;
    case 'negative':
      return e.operand.kind === 'number' ? -e.operand.value : undefined;
    default:
      return undefined;
  }
}

/** Flattens nested unions and drops repeated members; a one-member union is that member. */
function union(options: TypeNode[]): TypeNode {
  const flat: TypeNode[] = [];
  const seen = new Set<string>();
  for (const o of options.flatMap((x) => (x.k === 'union' ? x.options : [x]))) {
    const key = JSON.stringify(o);
    if (!seen.has(key)) flat.push(o);
    seen.add(key);
  }
  return flat.length === 1 ? flat[0]! : { k: 'union', options: flat };
}

function dedupe(problems: { line: number; message: string }[]): { line: number; message: string }[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.line}:${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export type { PyModuleSource };
