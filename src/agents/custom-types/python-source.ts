/**
 * Reads the statements of an upstream `custom_types.py` as text, without running Python: a
 * tokenizer in the shape of CPython's (logical lines, INDENT/DEDENT, brackets that continue a line),
 * then a parser for the few statement forms a types module uses (imports, classes, annotated
 * fields) and the expressions of annotations and defaults. Every other statement is kept as an
 * opaque `other` statement with its line, for the caller to refuse by name.
 */

export interface PySyntaxProblem {
  line: number;
  message: string;
}

type TokenType = 'name' | 'number' | 'string' | 'op' | 'newline' | 'indent' | 'dedent' | 'eof';

interface Token {
  type: TokenType;
  value: string;
  line: number;
  /** Offsets into the source, for quoting a construct exactly as written. */
  start: number;
  end: number;
}

class SyntaxProblem extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Nesting deeper than this reader follows: brackets (CPython's own limit: "too many nested
 * parentheses" past 200) and signs (`- - 1`; CPython gives up a few thousand deep). The reader
 * recurses per level, so without a limit a deep file would exhaust the stack, with no line to name.
 */
export const MAX_NESTING = 200;

/** A nesting problem inside a class body is the file's syntax problem, not an unreadable field. */
class NestingProblem extends SyntaxProblem {}

const OPERATORS = [
  '**=',
  '//=',
  '>>=',
  '<<=',
  '...',
  '->',
  '**',
  '//',
  '==',
  '!=',
  '<=',
  '>=',
  ':=',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
  '@=',
  '<<',
  '>>',
];
const SINGLE_OPS = '()[]{}:,.;@=+-*/%&|^~<>!';
const NUMBER = /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)/;
const NAME = /^[\p{L}_][\p{L}\p{N}_]*/u;
const STRING_START = /^([rRbBuUfF]{0,2})(['"])/;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const indents = [0];
  let i = 0;
  let line = 1;
  let depth = 0;
  /** The line of each bracket still open, for the message when one never closes. */
  const open: number[] = [];
  let atLineStart = true;
  const push = (type: TokenType, value: string, start: number, end: number, at = line) => tokens.push({ type, value, line: at, start, end });

  while (i < text.length) {
    if (atLineStart && depth === 0) {
      // Measure the indentation; blank and comment-only lines do not count.
      let col = 0;
      let j = i;
      while (j < text.length && (text[j] === ' ' || text[j] === '\t' || text[j] === '\f')) {
        col = text[j] === '\t' ? (Math.floor(col / 8) + 1) * 8 : text[j] === ' ' ? col + 1 : 0;
        j++;
      }
      if (j >= text.length) break;
      if (text[j] === '#' || text[j] === '\n' || text[j] === '\r') {
        while (j < text.length && text[j] !== '\n') j++;
        i = j + 1;
        line++;
        continue;
      }
      if (col > indents.at(-1)!) {
        indents.push(col);
        push('indent', '', j, j);
      } else {
        while (col < indents.at(-1)!) {
          indents.pop();
          push('dedent', '', j, j);
        }
        if (col !== indents.at(-1)) throw new SyntaxProblem(line, 'the indentation does not match any outer level');
      }
      i = j;
      atLineStart = false;
    }
    const c = text[i]!;
    if (c === '\n') {
      if (depth === 0) {
        push('newline', '', i, i + 1);
        atLineStart = true;
      }
      i++;
      line++;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\f' || c === '\r') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '\\' && (text[i + 1] === '\n' || (text[i + 1] === '\r' && text[i + 2] === '\n'))) {
      i += text[i + 1] === '\n' ? 2 : 3;
      line++;
      continue;
    }
    const rest = text.slice(i, i + 200);
    const str = STRING_START.exec(rest);
    if (str) {
      const startLine = line;
      const start = i;
      const quote = str[2]!;
      i += str[0].length;
      const triple = text.startsWith(quote.repeat(2), i);
      if (triple) i += 2;
      const close = triple ? quote.repeat(3) : quote;
      for (;;) {
        if (i >= text.length) throw new SyntaxProblem(startLine, 'a string is not closed');
        const ch = text[i]!;
        if (ch === '\\') {
          if (text[i + 1] === '\n') line++;
          i += 2;
          continue;
        }
        if (ch === '\n') {
          if (!triple) throw new SyntaxProblem(startLine, 'a string is not closed on its line');
          line++;
        }
        if (text.startsWith(close, i)) {
          i += close.length;
          break;
        }
        i++;
      }
      push('string', text.slice(start, i), start, i, startLine);
      continue;
    }
    const num = NUMBER.exec(rest);
    if (num && /[\d.]/.test(c) && !(c === '.' && !/\d/.test(text[i + 1] ?? ''))) {
      push('number', num[0], i, i + num[0].length);
      i += num[0].length;
      continue;
    }
    const name = NAME.exec(rest);
    if (name) {
      push('name', name[0], i, i + name[0].length);
      i += name[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i)) ?? (SINGLE_OPS.includes(c) ? c : undefined);
    if (!op) throw new SyntaxProblem(line, `unexpected character ${JSON.stringify(c)}`);
    if ('([{'.includes(op)) {
      if (++depth > MAX_NESTING) throw new NestingProblem(line, `brackets are nested more than ${MAX_NESTING} levels deep (Python allows ${MAX_NESTING})`);
      open.push(line);
    }
    if (')]}'.includes(op)) {
      depth = Math.max(0, depth - 1);
      open.pop();
    }
    push('op', op, i, i + op.length);
    i += op.length;
  }
  if (depth > 0) throw new SyntaxProblem(open.at(-1) ?? line, 'a bracket is not closed');
  if (tokens.length && tokens.at(-1)!.type !== 'newline' && tokens.at(-1)!.type !== 'dedent') push('newline', '', i, i);
  while (indents.length > 1) {
    indents.pop();
    push('dedent', '', i, i);
  }
  push('eof', '', i, i);
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Expressions (annotations, defaults, Field(...) calls, class bases)

export type PyExpr = { line: number; start: number; end: number } & (
  | { kind: 'name'; id: string }
  | { kind: 'attribute'; value: PyExpr; attr: string }
  | { kind: 'subscript'; value: PyExpr; index: PyExpr[] }
  | { kind: 'call'; func: PyExpr; args: PyExpr[]; keywords: { name: string; value: PyExpr }[] }
  | { kind: 'union'; left: PyExpr; right: PyExpr }
  | { kind: 'string'; value: string; prefix: string }
  | { kind: 'number'; value: number; text: string }
  | { kind: 'constant'; value: true | false | null }
  | { kind: 'ellipsis' }
  | { kind: 'list' | 'tuple' | 'set'; items: PyExpr[] }
  | { kind: 'dict'; entries: { key: PyExpr; value: PyExpr }[] }
  | { kind: 'negative'; operand: PyExpr }
  | { kind: 'other'; what: string }
);

export interface PyImport {
  /** The name bound in the module. */
  local: string;
  module: string;
  /** The imported name (`from m import a as b`: `a`); undefined for `import m`. */
  name?: string;
  line: number;
}

export interface PyClassStatement {
  kind: 'field';
  name: string;
  annotation: PyExpr;
  value?: PyExpr;
  line: number;
}

export interface PyAssignStatement {
  kind: 'assign';
  name: string;
  value: PyExpr;
  line: number;
}

/** A statement this reader does not interpret: a method, a decorator, `model_config`, ... */
export interface PyOtherStatement {
  kind: 'other';
  /** What it is, for the message: `def validate(...)`, `@field_validator`, `if ...`. */
  what: string;
  line: number;
}

export interface PyClassDef {
  name: string;
  line: number;
  bases: PyExpr[];
  keywords: { name: string; value: PyExpr }[];
  decorators: { what: string; line: number }[];
  docstring?: string;
  body: (PyClassStatement | PyAssignStatement | PyOtherStatement)[];
}

export interface PyModuleSource {
  imports: PyImport[];
  classes: PyClassDef[];
  /** Module-level statements other than imports, classes, `__all__` and docstrings. */
  others: PyOtherStatement[];
  problems: PySyntaxProblem[];
  /** The source text of an expression, as written. */
  textOf(e: PyExpr): string;
}

class Parser {
  private pos = 0;
  /** Signs being read, one inside the other (`- - 1`): unary() recurses per sign. */
  private signs = 0;
  /** Nesting problems met inside class bodies, reported as the file's syntax problems. */
  private readonly nestingProblems: PySyntaxProblem[] = [];

  constructor(
    private readonly tokens: Token[],
    private readonly text: string,
  ) {}

  get peek(): Token {
    return this.tokens[this.pos]!;
  }

  /** The current token's type, read anew (a getter's result would be narrowed by earlier checks). */
  typeNow(): TokenType {
    return this.tokens[this.pos]!.type;
  }

  next(): Token {
    return this.tokens[this.pos++]!;
  }

  isOp(value: string, t: Token = this.peek): boolean {
    return t.type === 'op' && t.value === value;
  }

  isName(value: string, t: Token = this.peek): boolean {
    return t.type === 'name' && t.value === value;
  }

  expectOp(value: string): Token {
    const t = this.next();
    if (!this.isOp(value, t)) throw new SyntaxProblem(t.line, `expected "${value}" but found ${describe(t)}`);
    return t;
  }

  expectName(): Token {
    const t = this.next();
    if (t.type !== 'name') throw new SyntaxProblem(t.line, `expected a name but found ${describe(t)}`);
    return t;
  }

  /** The rest of the logical line, and the indented block after it if any. */
  skipStatement(): void {
    while (this.peek.type !== 'newline' && this.peek.type !== 'eof') this.next();
    if (this.peek.type === 'newline') this.next();
    if (this.typeNow() === 'indent') this.skipBlock();
  }

  skipBlock(): void {
    let level = 0;
    do {
      const t = this.next();
      if (t.type === 'indent') level++;
      else if (t.type === 'dedent') level--;
      else if (t.type === 'eof') return;
    } while (level > 0);
  }

  /** The first line of the current statement, shortened, for a message. */
  statementText(from: Token): string {
    const lineEnd = this.text.indexOf('\n', from.start);
    const s = this.text.slice(from.start, lineEnd < 0 ? undefined : lineEnd).trim();
    return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  }

  // ---- module level

  module(): Omit<PyModuleSource, 'textOf'> {
    const out: Omit<PyModuleSource, 'textOf'> = { imports: [], classes: [], others: [], problems: [] };
    let first = true;
    while (this.peek.type !== 'eof') {
      const t = this.peek;
      if (t.type === 'newline' || t.type === 'dedent') {
        this.next();
        continue;
      }
      if (t.type === 'indent') {
        out.problems.push({ line: t.line, message: 'unexpected indentation' });
        this.skipBlock();
        continue;
      }
      const isFirst = first;
      first = false;
      const mark = this.pos;
      try {
        if (this.isName('from')) out.imports.push(...this.fromImport());
        else if (this.isName('import')) out.imports.push(...this.plainImport());
        else if (this.isName('class') || this.isOp('@')) {
          const decorators = this.decorators();
          if (this.isName('class')) out.classes.push({ ...this.classDef(), decorators });
          else {
            out.others.push({ kind: 'other', what: this.statementText(this.peek), line: this.peek.line });
            this.skipStatement();
          }
        } else if (t.type === 'string' && isFirst && this.tokens[this.pos + 1]?.type === 'newline') {
          this.skipStatement(); // the module docstring
        } else if (this.isName('__all__')) {
          this.skipStatement();
        } else {
          out.others.push({ kind: 'other', what: this.statementText(t), line: t.line });
          this.skipStatement();
        }
      } catch (e) {
        if (!(e instanceof SyntaxProblem)) throw e;
        out.problems.push({ line: e.line, message: e.message });
        // Resynchronise at the next statement of this level.
        if (this.pos === mark) this.next();
        this.skipStatement();
      }
    }
    out.problems.push(...this.nestingProblems);
    out.problems.sort((a, b) => a.line - b.line);
    return out;
  }

  private dottedName(): string {
    let name = this.expectName().value;
    while (this.isOp('.')) {
      this.next();
      name += `.${this.expectName().value}`;
    }
    return name;
  }

  private fromImport(): PyImport[] {
    const line = this.next().line;
    let module = '';
    while (this.isOp('.') || this.isOp('...')) module += this.next().value;
    if (!this.isName('import')) module += this.dottedName();
    if (!this.isName('import')) throw new SyntaxProblem(this.peek.line, `expected "import" but found ${describe(this.peek)}`);
    this.next();
    const paren = this.isOp('(');
    if (paren) this.next();
    const out: PyImport[] = [];
    if (this.isOp('*')) {
      this.next();
      out.push({ local: '*', module, name: '*', line });
    } else {
      for (;;) {
        const name = this.expectName().value;
        let local = name;
        if (this.isName('as')) {
          this.next();
          local = this.expectName().value;
        }
        out.push({ local, module, name, line });
        if (!this.isOp(',')) break;
        this.next();
        if (paren && this.isOp(')')) break;
      }
    }
    if (paren) this.expectOp(')');
    this.endOfStatement();
    return out;
  }

  private plainImport(): PyImport[] {
    const line = this.next().line;
    const out: PyImport[] = [];
    for (;;) {
      const module = this.dottedName();
      let local = module.split('.')[0]!;
      if (this.isName('as')) {
        this.next();
        local = this.expectName().value;
      }
      out.push({ local, module, line });
      if (!this.isOp(',')) break;
      this.next();
    }
    this.endOfStatement();
    return out;
  }

  private endOfStatement(): void {
    if (this.isOp(';')) throw new SyntaxProblem(this.peek.line, 'several statements on one line (";") are not read');
    const t = this.next();
    if (t.type !== 'newline' && t.type !== 'eof') throw new SyntaxProblem(t.line, `unexpected ${describe(t)}`);
  }

  private decorators(): { what: string; line: number }[] {
    const out: { what: string; line: number }[] = [];
    while (this.isOp('@')) {
      const at = this.peek;
      out.push({ what: this.statementText(at), line: at.line });
      while (this.peek.type !== 'newline' && this.peek.type !== 'eof') this.next();
      if (this.peek.type === 'newline') this.next();
    }
    return out;
  }

  private classDef(): Omit<PyClassDef, 'decorators'> {
    const line = this.next().line;
    const name = this.expectName().value;
    const bases: PyExpr[] = [];
    const keywords: { name: string; value: PyExpr }[] = [];
    if (this.isOp('(')) {
      this.next();
      while (!this.isOp(')')) {
        if (this.peek.type === 'name' && this.isOp('=', this.tokens[this.pos + 1])) {
          const k = this.next().value;
          this.next();
          keywords.push({ name: k, value: this.expression() });
        } else bases.push(this.expression());
        if (!this.isOp(',')) break;
        this.next();
      }
      this.expectOp(')');
    }
    this.expectOp(':');
    const cls: Omit<PyClassDef, 'decorators'> = { name, line, bases, keywords, body: [] };
    if (this.peek.type !== 'newline') {
      // `class X(BaseModel): pass` on one line.
      this.classStatement(cls, true);
      return cls;
    }
    this.next();
    if (this.typeNow() !== 'indent') throw new SyntaxProblem(this.peek.line, `class ${name} has no indented body`);
    this.next();
    let first = true;
    while (this.typeNow() !== 'dedent' && this.typeNow() !== 'eof') {
      if (this.peek.type === 'newline') {
        this.next();
        continue;
      }
      const mark = this.pos;
      try {
        this.classStatement(cls, first);
      } catch (e) {
        if (!(e instanceof SyntaxProblem)) throw e;
        if (e instanceof NestingProblem) this.nestingProblems.push({ line: e.line, message: e.message });
        else cls.body.push({ kind: 'other', what: `unreadable statement (${e.message})`, line: e.line });
        if (this.pos === mark) this.next();
        this.skipStatement();
      }
      first = false;
    }
    if (this.typeNow() === 'dedent') this.next();
    return cls;
  }

  private classStatement(cls: Omit<PyClassDef, 'decorators'>, first: boolean): void {
    const t = this.peek;
    if (t.type === 'string' && this.tokens[this.pos + 1]?.type === 'newline') {
      const value = this.expression();
      if (first && value.kind === 'string') cls.docstring = cleandoc(value.value);
      // A string later in the body is a no-op expression (some tools read it as a field's doc).
      this.endOfStatement();
      return;
    }
    if (this.isName('pass') || this.isOp('...')) {
      this.next();
      this.endOfStatement();
      return;
    }
    if (t.type === 'name' && (this.isOp(':', this.tokens[this.pos + 1]) || this.isOp('=', this.tokens[this.pos + 1])) && !KEYWORDS.has(t.value)) {
      const name = this.next().value;
      if (this.isOp(':')) {
        this.next();
        const annotation = this.expression();
        let value: PyExpr | undefined;
        if (this.isOp('=')) {
          this.next();
          value = this.expression();
        }
        this.endOfStatement();
        cls.body.push({ kind: 'field', name, annotation, value, line: t.line });
      } else {
        this.next();
        const value = this.expression();
        if (this.isOp('=')) throw new SyntaxProblem(t.line, 'chained assignment');
        this.endOfStatement();
        cls.body.push({ kind: 'assign', name, value, line: t.line });
      }
      return;
    }
    cls.body.push({ kind: 'other', what: this.statementText(t), line: t.line });
    if (this.isOp('@')) {
      this.decorators();
      if (this.peek.type !== 'dedent' && this.peek.type !== 'eof') this.skipStatement();
      return;
    }
    this.skipStatement();
  }

  // ---- expressions: `a | b`, then postfix (`x.y`, `x[...]`, `x(...)`), then atoms

  expression(): PyExpr {
    if (this.isName('lambda')) {
      const t = this.peek;
      while (!this.isOp(',') && !this.isOp(')') && this.peek.type !== 'newline' && this.peek.type !== 'eof') this.next();
      return { kind: 'other', what: 'lambda', line: t.line, start: t.start, end: this.tokens[this.pos - 1]!.end };
    }
    let left = this.unary();
    while (this.isOp('|')) {
      this.next();
      const right = this.unary();
      left = { kind: 'union', left, right, line: left.line, start: left.start, end: right.end };
    }
    if (this.peek.type === 'op' && BINARY.has(this.peek.value)) {
      const t = this.peek;
      // Arithmetic or comparison: not a type and not a literal; kept whole for the message.
      while (this.peek.type === 'op' && BINARY.has(this.peek.value)) {
        this.next();
        this.unary();
      }
      return { kind: 'other', what: `"${t.value}" expression`, line: left.line, start: left.start, end: this.tokens[this.pos - 1]!.end };
    }
    if (this.isName('if') || this.isName('for') || this.isName('and') || this.isName('or') || this.isName('not') || this.isName('in') || this.isName('is')) {
      const t = this.peek;
      while (!this.isOp(',') && !this.isOp(')') && !this.isOp(']') && !this.isOp('}') && this.peek.type !== 'newline' && this.peek.type !== 'eof') {
        if (this.isOp('(') || this.isOp('[') || this.isOp('{')) this.atom();
        else this.next();
      }
      return { kind: 'other', what: `"${t.value}" expression`, line: left.line, start: left.start, end: this.tokens[this.pos - 1]!.end };
    }
    return left;
  }

  private unary(): PyExpr {
    if (this.isOp('-') || this.isOp('+')) {
      const t = this.next();
      if (this.signs === MAX_NESTING) throw new NestingProblem(t.line, `the expression is nested more than ${MAX_NESTING} levels deep`);
      this.signs++;
      try {
        const operand = this.unary();
        if (t.value === '+') return operand;
        return { kind: 'negative', operand, line: t.line, start: t.start, end: operand.end };
      } finally {
        this.signs--;
      }
    }
    return this.postfix();
  }

  private postfix(): PyExpr {
    let e = this.atom();
    for (;;) {
      if (this.isOp('.')) {
        this.next();
        const attr = this.expectName();
        e = { kind: 'attribute', value: e, attr: attr.value, line: e.line, start: e.start, end: attr.end };
      } else if (this.isOp('[')) {
        this.next();
        const index = this.list(']');
        const close = this.expectOp(']');
        e = { kind: 'subscript', value: e, index, line: e.line, start: e.start, end: close.end };
      } else if (this.isOp('(')) {
        this.next();
        const args: PyExpr[] = [];
        const keywords: { name: string; value: PyExpr }[] = [];
        while (!this.isOp(')')) {
          if (this.isOp('*') || this.isOp('**')) {
            const star = this.next();
            const v = this.expression();
            args.push({ kind: 'other', what: `${star.value}${this.textOf(v)}`, line: star.line, start: star.start, end: v.end });
          } else if (this.peek.type === 'name' && this.isOp('=', this.tokens[this.pos + 1])) {
            const k = this.next().value;
            this.next();
            keywords.push({ name: k, value: this.expression() });
          } else args.push(this.expression());
          if (!this.isOp(',')) break;
          this.next();
        }
        const close = this.expectOp(')');
        e = { kind: 'call', func: e, args, keywords, line: e.line, start: e.start, end: close.end };
      } else return e;
    }
  }

  private list(close: string): PyExpr[] {
    const items: PyExpr[] = [];
    while (!this.isOp(close)) {
      items.push(this.expression());
      if (!this.isOp(',')) break;
      this.next();
    }
    return items;
  }

  private atom(): PyExpr {
    const t = this.next();
    const at = { line: t.line, start: t.start };
    switch (t.type) {
      case 'name':
        if (t.value === 'None') return { kind: 'constant', value: null, ...at, end: t.end };
        if (t.value === 'True' || t.value === 'False') return { kind: 'constant', value: t.value === 'True', ...at, end: t.end };
        return { kind: 'name', id: t.value, ...at, end: t.end };
      case 'number': {
        const text = t.value.replace(/_/g, '');
        const value = /^0[xob]/i.test(text) ? Number(text) : /[jJ]$/.test(text) ? NaN : Number(text);
        if (Number.isNaN(value)) return { kind: 'other', what: `the number ${t.value}`, ...at, end: t.end };
        return { kind: 'number', value, text: t.value, ...at, end: t.end };
      }
      case 'string': {
        // Adjacent literals are one string ("a" "b").
        let value = '';
        let prefix = '';
        let end = t.end;
        let tok: Token | undefined = t;
        while (tok) {
          const s = decodeString(tok);
          if (s.prefix.toLowerCase().includes('f') || s.prefix.toLowerCase().includes('b')) prefix = s.prefix;
          value += s.value;
          end = tok.end;
          tok = this.peek.type === 'string' ? this.next() : undefined;
        }
        return { kind: 'string', value, prefix, ...at, end };
      }
      case 'op':
        if (t.value === '...') return { kind: 'ellipsis', ...at, end: t.end };
        if (t.value === '(') {
          const items = this.list(')');
          const close = this.expectOp(')');
          const single = items.length === 1 && !this.isOp(',', this.tokens[this.pos - 2]!);
          if (single) return { ...items[0]!, start: t.start, end: close.end };
          return { kind: 'tuple', items, ...at, end: close.end };
        }
        if (t.value === '[') {
          const items = this.list(']');
          const close = this.expectOp(']');
          return { kind: 'list', items, ...at, end: close.end };
        }
        if (t.value === '{') {
          const entries: { key: PyExpr; value: PyExpr }[] = [];
          const items: PyExpr[] = [];
          while (!this.isOp('}')) {
            const key = this.expression();
            if (this.isOp(':')) {
              this.next();
              entries.push({ key, value: this.expression() });
            } else items.push(key);
            if (!this.isOp(',')) break;
            this.next();
          }
          const close = this.expectOp('}');
          if (items.length) return { kind: 'set', items, ...at, end: close.end };
          return { kind: 'dict', entries, ...at, end: close.end };
        }
        break;
    }
    throw new SyntaxProblem(t.line, `unexpected ${describe(t)}`);
  }

  textOf(e: PyExpr): string {
    return this.text.slice(e.start, e.end).replace(/\s*\n\s*/g, ' ');
  }
}

const KEYWORDS = new Set([
  'def',
  'class',
  'if',
  'for',
  'while',
  'with',
  'try',
  'return',
  'import',
  'from',
  'async',
  'del',
  'global',
  'nonlocal',
  'raise',
  'assert',
  'match',
]);
const BINARY = new Set(['+', '-', '*', '/', '//', '%', '**', '&', '^', '<<', '>>', '<', '>', '==', '!=', '<=', '>=', '@']);

function describe(t: Token): string {
  if (t.type === 'newline') return 'the end of the line';
  if (t.type === 'eof') return 'the end of the file';
  if (t.type === 'indent' || t.type === 'dedent') return 'a change of indentation';
  return `"${t.value}"`;
}

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '0': '\0',
  '\n': '',
};

function decodeString(t: Token): { prefix: string; value: string } {
  const m = STRING_START.exec(t.value)!;
  const prefix = m[1]!;
  const quote = m[2]!;
  const triple = t.value.startsWith(quote.repeat(3), prefix.length);
  const q = triple ? 3 : 1;
  const body = t.value.slice(prefix.length + q, t.value.length - q);
  if (/r/i.test(prefix)) return { prefix, value: body };
  const value = body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}]*\}|[\s\S])/g, (whole, esc: string) => {
    if (/^[xuU]/.test(esc)) return String.fromCodePoint(parseInt(esc.slice(1), 16));
    if (/^[0-7]+$/.test(esc)) return String.fromCodePoint(parseInt(esc, 8));
    return ESCAPES[esc] ?? whole;
  });
  return { prefix, value };
}

/** Python's `inspect.cleandoc`, which pydantic applies to a model's docstring for its description. */
export function cleandoc(doc: string): string {
  const lines = doc.replace(/\t/g, '        ').split('\n');
  let margin = Infinity;
  for (const l of lines.slice(1)) {
    const content = l.trimStart();
    if (content) margin = Math.min(margin, l.length - content.length);
  }
  const out = [lines[0]!.trimStart(), ...lines.slice(1).map((l) => (margin === Infinity ? l : l.slice(margin)))];
  while (out.length && !out[0]!.trim()) out.shift();
  while (out.length && !out.at(-1)!.trim()) out.pop();
  return out.join('\n');
}

/** Parses a `custom_types.py` text. Never throws: syntax problems come back with their line. */
export function parsePythonModule(text: string): PyModuleSource {
  let tokens: Token[];
  try {
    tokens = tokenize(text);
  } catch (e) {
    if (!(e instanceof SyntaxProblem)) throw e;
    return { imports: [], classes: [], others: [], problems: [{ line: e.line, message: `Python syntax: ${e.message}` }], textOf: () => '' };
  }
  const parser = new Parser(tokens, text);
  const module = parser.module();
  return {
    ...module,
    problems: module.problems.map((p) => ({ line: p.line, message: `Python syntax: ${p.message}` })),
    textOf: (e) => parser.textOf(e),
  };
}

/** Parses one expression (a quoted forward reference such as `"Agent"`), at a given line. */
export function parsePythonExpression(text: string, line: number): PyExpr | undefined {
  try {
    const tokens = tokenize(text).map((t) => ({ ...t, line }));
    const parser = new Parser(tokens, text);
    const e = parser.expression();
    return parser.peek.type === 'newline' || parser.peek.type === 'eof' ? e : undefined;
  } catch {
    return undefined;
  }
}
