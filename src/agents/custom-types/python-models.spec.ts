import { modelJsonSchema, validateModel } from './model-types';
import { readPythonTypes } from './python-models';

/** The file as an upstream custom_types.py would start. */
const HEAD = `from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, Field
from semantic_kernel.kernel_pydantic import KernelBaseModel
`;

function read(body: string) {
  return readPythonTypes(HEAD + body);
}

/** The lines of HEAD come first: line numbers in `body` start at 6. */
const L = (n: number) => n + HEAD.split('\n').length - 1;

function schemaOf(body: string, name: string) {
  const file = read(body);
  expect(file.problems).toEqual([]);
  return modelJsonSchema(name, file.registry);
}

function parse(body: string, name: string, value: unknown) {
  const file = read(body);
  expect(file.problems).toEqual([]);
  return validateModel(name, file.registry, value);
}

function problemsOf(body: string) {
  return read(body).problems;
}

describe('readPythonTypes: accepted constructs', () => {
  it('a KernelBaseModel with int fields (docs/demos/02_input_output) becomes an object schema, every field required', () => {
    expect(schemaOf('\nclass NumbersInput(KernelBaseModel):\n    number_1: int\n    number_2: int\n', 'NumbersInput')).toEqual({
      title: 'NumbersInput',
      type: 'object',
      properties: { number_1: { type: 'integer' }, number_2: { type: 'integer' } },
      required: ['number_1', 'number_2'],
    });
  });

  it('pydantic BaseModel, the scalar annotations, and the class docstring as description (cleandoc)', () => {
    const s = schemaOf(
      `
class Memory(BaseModel):
    """
    A memory based on some previous interaction
      indented line
    """

    text: str
    count: int
    score: float
    pinned: bool
    anything: Any
    nothing: None
`,
      'Memory',
    );
    expect(s.description).toBe('A memory based on some previous interaction\n  indented line');
    expect(s.properties).toEqual({
      text: { type: 'string' },
      count: { type: 'integer' },
      score: { type: 'number' },
      pinned: { type: 'boolean' },
      anything: {},
      nothing: { type: 'null' },
    });
  });

  it('list[...], List[...], typing.List[...] and bare list', () => {
    const s = schemaOf(
      `import typing

class Lists(BaseModel):
    a: list[str]
    b: List[int]
    c: typing.List[float]
    d: list
`,
      'Lists',
    );
    expect(s.properties).toEqual({
      a: { type: 'array', items: { type: 'string' } },
      b: { type: 'array', items: { type: 'integer' } },
      c: { type: 'array', items: { type: 'number' } },
      d: { type: 'array', items: {} },
    });
  });

  it('dict[str, ...] and Dict[str, ...]', () => {
    const s = schemaOf('\nclass Maps(BaseModel):\n    a: dict[str, str]\n    b: Dict[str, List[int]]\n    c: dict\n', 'Maps');
    expect(s.properties).toEqual({
      a: { type: 'object', additionalProperties: { type: 'string' } },
      b: { type: 'object', additionalProperties: { type: 'array', items: { type: 'integer' } } },
      c: { type: 'object', additionalProperties: true },
    });
  });

  it('Optional[X], X | None and Union[...] become anyOf; Optional without a default stays required (pydantic v2)', () => {
    const s = schemaOf(
      `
class Maybe(BaseModel):
    a: Optional[str]
    b: str | None = None
    c: Union[int, str]
    d: int | str | None = None
`,
      'Maybe',
    );
    expect(s.properties).toEqual({
      a: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      b: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null },
      c: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
      d: { anyOf: [{ type: 'integer' }, { type: 'string' }, { type: 'null' }], default: null },
    });
    expect(s.required).toEqual(['a', 'c']);
  });

  it('Literal[...] becomes enum (or const for one value)', () => {
    const s = schemaOf('\nclass Pick(BaseModel):\n    level: Literal["High", "Medium", "Low"]\n    kind: Literal["memo"]\n    n: Literal[1, 2]\n', 'Pick');
    expect(s.properties).toEqual({
      level: { enum: ['High', 'Medium', 'Low'], type: 'string' },
      kind: { const: 'memo', type: 'string' },
      n: { enum: [1, 2], type: 'integer' },
    });
  });

  it('other models of the file, in any order and quoted, go under $defs', () => {
    const s = schemaOf(
      `
class PlanningAgentOutput(KernelBaseModel):
    can_succeed: bool
    steps: list["Step"] | None

class Step(BaseModel):
    step_number: int
    step_tasks: List[Task]

class Task(BaseModel):
    task_id: str
`,
      'PlanningAgentOutput',
    );
    expect(s.properties).toEqual({
      can_succeed: { type: 'boolean' },
      steps: { anyOf: [{ type: 'array', items: { $ref: '#/$defs/Step' } }, { type: 'null' }] },
    });
    expect(Object.keys(s.$defs as object)).toEqual(['Step', 'Task']);
    expect((s.$defs as Record<string, unknown>).Step).toEqual({
      title: 'Step',
      type: 'object',
      properties: { step_number: { type: 'integer' }, step_tasks: { type: 'array', items: { $ref: '#/$defs/Task' } } },
      required: ['step_number', 'step_tasks'],
    });
  });

  it('Field(description=, default=), Field(...), Field(None), positional defaults, default_factory, title, examples and plain literal defaults', () => {
    const s = schemaOf(
      `
class Memory(KernelBaseModel):
    memory_id: str = Field(description="The unique identifier for the memory")
    access_count: int = Field(
        description="The number of times the memory has been accessed"
    )
    user_id: str = Field(..., description="The user")
    note: Optional[str] = Field(None, description="A note")
    tags: list[str] = Field(default_factory=list)
    meta: dict[str, str] = Field(default_factory=dict, title="Meta")
    level: int = Field(default=3, examples=[1, 2])
    label: str = "none"
    ratio: float = -0.5
    flags: list[bool] = [True, False]
    extra: dict[str, int] = {"a": 1}
    required_too: int = ...
`,
      'Memory',
    );
    expect(s.properties).toEqual({
      memory_id: { type: 'string', description: 'The unique identifier for the memory' },
      access_count: { type: 'integer', description: 'The number of times the memory has been accessed' },
      user_id: { type: 'string', description: 'The user' },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'A note', default: null },
      tags: { type: 'array', items: { type: 'string' }, default: [] },
      meta: { type: 'object', additionalProperties: { type: 'string' }, title: 'Meta', default: {} },
      level: { type: 'integer', default: 3, examples: [1, 2] },
      label: { type: 'string', default: 'none' },
      ratio: { type: 'number', default: -0.5 },
      flags: { type: 'array', items: { type: 'boolean' }, default: [true, false] },
      extra: { type: 'object', additionalProperties: { type: 'integer' }, default: { a: 1 } },
      required_too: { type: 'integer' },
    });
    expect(s.required).toEqual(['memory_id', 'access_count', 'user_id', 'required_too']);
  });

  it("inherits from upstream's BaseInput (assistant-orchestrator example): chat_history first, then its own fields", () => {
    const s = readPythonTypes(`from typing import List

from sk_agents.ska_types import BaseInput

from semantic_kernel.kernel_pydantic import KernelBaseModel


class Agent(KernelBaseModel):
    name: str
    description: str


class GeneralInput(BaseInput):
    agents: List[Agent]
`);
    expect(s.problems).toEqual([]);
    const schema = modelJsonSchema('GeneralInput', s.registry);
    expect(Object.keys(schema.properties as object)).toEqual(['chat_history', 'agents']);
    expect(schema.required).toEqual(['agents']);
    expect(Object.keys(schema.$defs as object)).toEqual(['Agent', 'HistoryMessage']);
  });

  it('inherits from another model of the file: base fields first, a redefined field keeps its place', () => {
    const s = schemaOf(
      `
class Base(BaseModel):
    a: int
    b: str

class Child(Base):
    c: bool
    a: int = 1
`,
      'Child',
    );
    expect(Object.keys(s.properties as object)).toEqual(['a', 'b', 'c']);
    expect(s.required).toEqual(['b', 'c']);
  });

  it('Enum classes (collab-orchestrator manager example), as a field type and as a default', () => {
    const s = readPythonTypes(`from enum import Enum

from pydantic import BaseModel


class Action(Enum):
    """What to do next"""
    PROVIDE_RESULT = "provide_result"
    ABORT = "abort"


class Level(int, Enum):
    LOW = 1
    HIGH = 2


class ManagerOutput(BaseModel):
    next_action: Action = Action.ABORT
    level: Level
`);
    expect(s.problems).toEqual([]);
    const schema = modelJsonSchema('ManagerOutput', s.registry);
    expect(schema.properties).toEqual({ next_action: { $ref: '#/$defs/Action', default: 'abort' }, level: { $ref: '#/$defs/Level' } });
    expect(schema.$defs).toEqual({
      Action: { title: 'Action', description: 'What to do next', enum: ['provide_result', 'abort'], type: 'string' },
      Level: { title: 'Level', enum: [1, 2], type: 'integer' },
    });
  });

  it('reads comments, blank lines, backslash continuations, aliases and a one-line class', () => {
    const file = readPythonTypes(`"""Module docstring."""
from __future__ import annotations
import typing as t
from pydantic import BaseModel as BM, Field as F  # aliases

__all__ = ["A", "B"]

class A(BM):  # a comment
    # a comment line
    x: t.Optional[int] = \\
        F(default=None, description='it''s "x"')

class B(BM): pass
`);
    expect(file.problems).toEqual([]);
    expect(modelJsonSchema('A', file.registry).properties).toEqual({
      x: { anyOf: [{ type: 'integer' }, { type: 'null' }], description: 'its "x"', default: null },
    });
    expect(modelJsonSchema('B', file.registry)).toEqual({ title: 'B', type: 'object', properties: {} });
  });
});

describe('readPythonTypes: validation as pydantic does it', () => {
  const body = `
class Agent(BaseModel):
    name: str
    description: str = "none"

class Input(BaseModel):
    goal: str
    agents: list[Agent]
    level: Literal["low", "high"] = "low"
    count: int = 1
    note: Optional[str] = None
`;

  it('fills defaults, drops unknown keys, keeps field order', () => {
    expect(parse(body, 'Input', { agents: [{ name: 'a', extra: 1 }], goal: 'g', unknown: true })).toEqual({
      ok: true,
      value: { goal: 'g', agents: [{ name: 'a', description: 'none' }], level: 'low', count: 1, note: null },
    });
  });

  it('reports every problem by dotted path, in pydantic wording', () => {
    expect(parse(body, 'Input', { agents: [{ description: 5 }], level: 'mid', count: 'x', note: 3 })).toEqual({
      ok: false,
      errors: [
        { field: 'goal', message: 'Field required' },
        { field: 'agents.0.name', message: 'Field required' },
        { field: 'agents.0.description', message: 'Input should be a valid string' },
        { field: 'level', message: "Input should be 'low' or 'high'" },
        { field: 'count', message: 'Input should be a valid integer' },
        { field: 'note', message: 'Input should be a valid string or None' },
      ],
    });
  });

  it('accepts numeric strings for numbers (lax mode) but prefers an exact union member', () => {
    expect(parse('\nclass N(BaseModel):\n    n: int\n    x: float\n    u: int | str\n', 'N', { n: '7', x: '1.5', u: '7' })).toEqual({
      ok: true,
      value: { n: 7, x: 1.5, u: '7' },
    });
    expect(parse('\nclass N(BaseModel):\n    n: int\n', 'N', { n: 1.5 })).toEqual({
      ok: false,
      errors: [{ field: 'n', message: 'Input should be a valid integer, got a number with a fractional part' }],
    });
  });

  it("reads upstream's {role, content} history messages into items for HistoryMultiModalMessage", () => {
    const file = readPythonTypes('from sk_agents.ska_types import BaseMultiModalInput\n\nclass In(BaseMultiModalInput):\n    topic: str\n');
    expect(validateModel('In', file.registry, { topic: 't', chat_history: [{ role: 'user', content: 'hi' }] })).toEqual({
      ok: true,
      value: { session_id: null, chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'hi' }] }], topic: 't' },
    });
  });
});

describe('readPythonTypes: refused constructs, each with its line', () => {
  it('a method', () => {
    expect(problemsOf('\nclass A(BaseModel):\n    x: int\n\n    def double(self):\n        return self.x * 2\n')).toEqual([
      { line: L(5), message: 'class A: "def double(self):" is not supported: methods and validators cannot be read without running Python' },
    ]);
  });

  it('a validator decorator', () => {
    expect(
      problemsOf(
        'from pydantic import field_validator\n\nclass A(BaseModel):\n    x: int\n\n    @field_validator("x")\n    @classmethod\n    def check(cls, v):\n        return v\n',
      ),
    ).toEqual([
      {
        line: L(6),
        message: 'class A: "@field_validator("x")" is not supported: decorators (validators, computed fields) cannot be read without running Python',
      },
    ]);
  });

  it('model_config', () => {
    expect(problemsOf('from pydantic import ConfigDict\n\nclass A(BaseModel):\n    model_config = ConfigDict(extra="forbid")\n    x: int\n')).toEqual([
      { line: L(4), message: 'class A: model settings (model_config = ...) are not supported' },
    ]);
  });

  it.each([
    ['tuple[int, int]', ''],
    ['set[str]', ''],
    ['datetime', ' (imported from datetime)'],
    ['Annotated[int, 3]', ' (from typing)'],
    ['Sequence[str]', ' (from typing)'],
    ['Color', ' (not defined or imported in this file)'],
  ])('the annotation %s', (annotation, detail) => {
    const imports = 'from datetime import datetime\nfrom typing import Annotated, Sequence\n';
    const problems = readPythonTypes(`${imports}from pydantic import BaseModel\n\nclass A(BaseModel):\n    ok: int\n    x: ${annotation}\n`).problems;
    const subscript = annotation.includes('[');
    expect(problems).toEqual([
      {
        line: 7,
        message: `class A, field "x": the type "${annotation}"${subscript ? '' : detail} is not supported (supported: str, int, float, bool, None, Any, list[...], dict[str, ...], Optional[...], Union[...], X | Y, Literal[...], and models or Enums of this file or of sk_agents.ska_types)`,
      },
    ]);
  });

  it('a dict whose keys are not str, and a list with two item types', () => {
    const problems = problemsOf('\nclass A(BaseModel):\n    a: dict[int, str]\n    b: list[int, str]\n');
    expect(problems.map((p) => [p.line, p.message.split(' is not supported')[0]])).toEqual([
      [L(3), 'class A, field "a": the type "dict[int, str]" (JSON object keys are strings: use dict[str, ...])'],
      [L(4), 'class A, field "b": the type "list[int, str]" (list takes 1 type)'],
    ]);
  });

  it('a default that is not a literal, and Field keywords other than the supported ones', () => {
    expect(
      problemsOf('\nclass A(BaseModel):\n    a: int = compute()\n    b: str = Field(alias="B")\n    c: list[int] = Field(default_factory=lambda: [1])\n'),
    ).toEqual([
      {
        line: L(3),
        message: 'class A, field "a": the default "compute()" is not a literal (use a string, number, boolean, None, a list or dict of them, or Field(...))',
      },
      { line: L(4), message: 'class A, field "b": Field(alias=...) is not supported (supported: default, default_factory, description, title, examples)' },
      { line: L(5), message: 'class A, field "c": Field(default_factory=lambda: [1]) is not supported (only list or dict)' },
    ]);
  });

  it('a module-level statement other than imports and classes', () => {
    expect(problemsOf('import logging\nlogger = logging.getLogger(__name__)\n\nclass A(BaseModel):\n    x: int\n')).toEqual([
      {
        line: L(2),
        message:
          'module-level statement "logger = logging.getLogger(__name__)" is not supported: a custom types file may hold only imports, docstrings, model classes and Enum classes',
      },
    ]);
  });

  it('a base class that is not a model, and a class with no base', () => {
    expect(problemsOf('from abc import ABC\n\nclass A(ABC):\n    x: int\n\nclass B:\n    x: int\n')).toEqual([
      {
        line: L(3),
        message:
          'class A: the base class "ABC" (imported from abc) is not supported: a model derives from BaseModel, KernelBaseModel, a model of sk_agents.ska_types or another model of this file; an Enum from Enum',
      },
      { line: L(6), message: 'class B is not a model: a model derives from BaseModel or KernelBaseModel' },
    ]);
  });

  it('a class keyword, a class decorator, an attribute without annotation, a private attribute', () => {
    expect(problemsOf('from dataclasses import dataclass\n\n@dataclass\nclass A(BaseModel, extra="forbid"):\n    x = 5\n    _y: int\n')).toEqual([
      { line: L(3), message: 'class A: the decorator "@dataclass" is not supported' },
      { line: L(4), message: 'class A: the class keyword "extra=" is not supported (model settings are not read)' },
      { line: L(5), message: 'class A: "x = ..." has no type annotation (pydantic fields are annotated: x: str = ...)' },
      { line: L(6), message: 'class A, field "_y": private attributes (a leading underscore) are not supported' },
    ]);
  });

  it('recursive models', () => {
    expect(problemsOf('\nclass Node(BaseModel):\n    children: list["Node"]\n')).toEqual([
      { line: L(2), message: 'class Node: recursive models are not supported (Node → Node)' },
    ]);
  });

  it('an Enum member that is not a literal', () => {
    expect(problemsOf('from enum import Enum, auto\n\nclass Color(Enum):\n    RED = auto()\n')).toEqual([
      { line: L(4), message: 'Enum Color, member RED: the value "auto()" is not supported (use a string or integer literal)' },
    ]);
  });

  it('"import *"', () => {
    expect(problemsOf('from mod import *\n\nclass A(BaseModel):\n    x: int\n')).toEqual([
      { line: L(1), message: '"from mod import *" is not supported: import the names the types use' },
    ]);
  });

  it('Python syntax errors', () => {
    expect(problemsOf('\nclass A(BaseModel):\n    x: list[int\n')).toEqual([{ line: L(3), message: 'Python syntax: a bracket is not closed' }]);
    expect(readPythonTypes('class A(BaseModel):\n    x: str = "open\n').problems).toEqual([
      { line: 2, message: 'Python syntax: a string is not closed on its line' },
    ]);
    expect(readPythonTypes('class A(BaseModel):\n        x: int\n    y: int\n').problems).toEqual([
      { line: 3, message: 'Python syntax: the indentation does not match any outer level' },
    ]);
  });
});

describe('readPythonTypes: nesting the reader cannot follow is refused at its line, never by exhausting the stack', () => {
  const nested = (levels: number) => `${'list['.repeat(levels)}int${']'.repeat(levels)}`;

  it('brackets nested deeper than Python allows (200 levels, as CPython: "too many nested parentheses")', () => {
    for (const levels of [201, 20_000]) {
      expect(problemsOf(`\nclass A(BaseModel):\n    x: ${nested(levels)}\n`)).toEqual([
        { line: L(3), message: 'Python syntax: brackets are nested more than 200 levels deep (Python allows 200)' },
      ]);
    }
  });

  it('an expression that nests without brackets (a chain of signs)', () => {
    expect(problemsOf(`\nclass A(BaseModel):\n    x: int = ${'-'.repeat(20_000)}1\n`)).toEqual([
      { line: L(3), message: 'Python syntax: the expression is nested more than 200 levels deep' },
    ]);
  });

  it('models nested deeper than a JSON body may be (64 levels): refused at the outermost class, for a chain of any length', () => {
    const chain = (n: number) => {
      let body = `\nclass C${n}(BaseModel):\n    x: int\n`;
      for (let i = n - 1; i >= 0; i--) body += `\nclass C${i}(BaseModel):\n    next: C${i + 1}\n`;
      return body;
    };
    // C0 holds C1 ... holds C64: 65 objects, one inside the other.
    expect(problemsOf(chain(63))).toEqual([]);
    const outermost = (n: number) => L(2 + 3 * n);
    expect(problemsOf(chain(64))).toEqual([
      { line: outermost(64), message: 'class C0: its values nest 65 levels deep (C0 → C1 → C2 → … → C64), deeper than the 64 levels a JSON body may have' },
    ]);
    expect(problemsOf(chain(5000))).toEqual([
      {
        line: outermost(5000),
        message: 'class C0: its values nest 5001 levels deep (C0 → C1 → C2 → … → C5000), deeper than the 64 levels a JSON body may have',
      },
    ]);
  });
});

describe('readPythonTypes: a class defined again (two custom_types.py merged), read as Python runs it', () => {
  it('is accepted: the later definition is what the name means; each redefinition is reported with both lines', () => {
    const file = read('\nclass A(BaseModel):\n    x: int\n\nclass A(BaseModel):\n    y: str\n');
    expect(file.problems).toEqual([]);
    expect(file.redefinitions).toEqual([{ name: 'A', line: L(5), earlier: L(2) }]);
    expect(file.lines.get('A')).toBe(L(5));
    expect(modelJsonSchema('A', file.registry)).toEqual({ title: 'A', type: 'object', properties: { y: { type: 'string' } }, required: ['y'] });
    expect(validateModel('A', file.registry, { x: 1 })).toEqual({ ok: false, errors: [{ field: 'y', message: 'Field required' }] });
  });

  it('a class after the redefinition, and a quoted (forward) reference anywhere, use the later definition', () => {
    const file = read(`
class Agent(BaseModel):
    name: str

class Early(BaseModel):
    agents: list["Agent"]

class Agent(BaseModel):
    name: str
    description: str

class Late(BaseModel):
    agents: list[Agent]
`);
    expect(file.problems).toEqual([]);
    expect(file.redefinitions).toEqual([{ name: 'Agent', line: L(8), earlier: L(2) }]);
    for (const name of ['Early', 'Late']) {
      expect(validateModel(name, file.registry, { agents: [{ name: 'a' }] })).toEqual({
        ok: false,
        errors: [{ field: 'agents.0.description', message: 'Field required' }],
      });
    }
  });

  it("the same class twice (upstream's agent selector and general agent both define Agent): the classes in between use it too", () => {
    const file = read(`
class Agent(KernelBaseModel):
    name: str
    description: str

class AgentSelectorInput(KernelBaseModel):
    agent_list: List[Agent]

class Agent(KernelBaseModel):
    name: str
    description: str
`);
    expect(file.problems).toEqual([]);
    expect(file.redefinitions).toEqual([{ name: 'Agent', line: L(9), earlier: L(2) }]);
    expect(validateModel('AgentSelectorInput', file.registry, { agent_list: [{ name: 'a', description: 'b' }] })).toEqual({
      ok: true,
      value: { agent_list: [{ name: 'a', description: 'b' }] },
    });
  });

  it('a class in between that uses an earlier definition unlike the later one is refused (Python binds the earlier one there; one name is one model here)', () => {
    expect(
      problemsOf(`
class Agent(BaseModel):
    name: str

class Selector(BaseModel):
    agent_list: list[Agent]

class Special(Agent):
    rank: int

class Agent(BaseModel):
    name: str
    description: str
`),
    ).toEqual([
      {
        line: L(6),
        message: `class Selector, field "agent_list": "Agent" here is the class of line ${L(2)}, which line ${L(11)} defines again differently; Python keeps the earlier class for this use, and one name is one model here: rename one of the two classes`,
      },
      {
        line: L(8),
        message: `class Special, base class "Agent": "Agent" here is the class of line ${L(2)}, which line ${L(11)} defines again differently; Python keeps the earlier class for this use, and one name is one model here: rename one of the two classes`,
      },
    ]);
  });
});
