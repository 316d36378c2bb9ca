import { join } from 'node:path';
import { configProblems, loadConfigFiles, writeConfigDir } from '../config/config.fixtures';
import { loadAgentConfigs } from '../config/load-agent-configs';

const writeDir = writeConfigDir;
const load = loadConfigFiles;
const problems = configProblems;

const sequential = (name: string, input: string, output?: string) =>
  [
    'apiVersion: skagents/v1',
    'kind: Sequential',
    `service_name: ${name}`,
    'version: 0.1',
    `input_type: ${input}`,
    ...(output ? [`output_type: ${output}`] : []),
    'spec:',
    '  agents:',
    '    - {name: default, model: local/echo}',
    '  tasks:',
    '    - {name: t, task_no: 1, instructions: "Add {{number_1}} {{number_2}}", agent: default}',
    '',
  ].join('\n');

const NUMBERS = `from semantic_kernel.kernel_pydantic import KernelBaseModel


class NumbersInput(KernelBaseModel):
    number_1: int
    number_2: int


class AddOutput(KernelBaseModel):
    result: int
    note: str | None = None
`;

describe('custom types at boot', () => {
  it('finds input_type and output_type in custom_types.py beside the file; the output type becomes a strict response_format', () => {
    const [a] = load({ 'adder.yaml': sequential('Adder', 'NumbersInput', 'AddOutput'), 'custom_types.py': NUMBERS });
    expect(a!.inputType).toBe('NumbersInput');
    expect(a!.inputSchema).toMatchObject({ name: 'NumbersInput', origin: 'custom_types.py:4', fields: ['number_1', 'number_2'] });
    expect(a!.inputSchema!.parse({ number_1: '2', number_2: 3 })).toEqual({ ok: true, value: { number_1: 2, number_2: 3 } });
    expect(a!.outputSchema!.responseFormat).toEqual({
      name: 'AddOutput',
      schema: {
        title: 'AddOutput',
        type: 'object',
        properties: { result: { type: 'integer' }, note: { anyOf: [{ type: 'string' }, { type: 'null' }] } },
        required: ['result', 'note'],
        additionalProperties: false,
      },
    });
  });

  it("reports problems of custom_types.py as custom_types.py:line, once for all agents using it, with the agent files' own problems", () => {
    const py = `from datetime import datetime
from pydantic import BaseModel, field_validator


class Event(BaseModel):
    when: datetime
    title: str

    @field_validator("title")
    def check(cls, v):
        return v
`;
    expect(
      problems({ 'a.yaml': sequential('A', 'Event'), 'b.yaml': sequential('B', 'Event').replace('local/echo', 'local/nope'), 'custom_types.py': py }),
    ).toEqual([
      'custom_types.py:6: class Event, field "when": the type "datetime" (imported from datetime) is not supported (supported: str, int, float, bool, None, Any, list[...], dict[str, ...], Optional[...], Union[...], X | Y, Literal[...], and models or Enums of this file or of sk_agents.ska_types)',
      'custom_types.py:9: class Event: "@field_validator("title")" is not supported: decorators (validators, computed fields) cannot be read without running Python',
      'b.yaml:8: spec.agents.0.model: unknown built-in model "local/nope" (built-in models: local/echo)',
    ]);
  });

  it('names the types the file defines when the one asked for is missing, at the line of the field', () => {
    expect(problems({ 'a.yaml': sequential('A', 'NumberInput', 'AddOutputs'), 'custom_types.py': NUMBERS })).toEqual([
      'a.yaml:5: input_type: no type "NumberInput" in custom_types.py beside this file (it defines NumbersInput, AddOutput)',
      'a.yaml:6: output_type: no type "AddOutputs" in custom_types.py beside this file (it defines NumbersInput, AddOutput)',
    ]);
  });

  it('refuses a custom input type for kind: Chat (upstream raises "Invalid input type"), an Enum as a type, and an output type strict mode cannot express', () => {
    const py = `from enum import Enum
from pydantic import BaseModel


class Mood(Enum):
    HAPPY = "happy"


class Loose(BaseModel):
    tags: dict[str, str]
`;
    const chat =
      'apiVersion: skagents/v1\nkind: Chat\nservice_name: C\nversion: 1\ninput_type: Loose\noutput_type: Loose\nspec:\n  agent: {name: a, model: local/echo}\n';
    expect(problems({ 'chat.yaml': chat, 'seq.yaml': sequential('S', 'Mood'), 'custom_types.py': py })).toEqual([
      'chat.yaml:5: input_type: "Loose" is a custom type, and kind: Chat takes only BaseInput, BaseInputWithUserContext, BaseMultiModalInput, BaseMultiModalInputWithUserContext (as upstream): use kind: Sequential, whose task instructions read the input\'s fields, or kind: Agent',
      'chat.yaml:6: output_type: "Loose" (custom_types.py:9) cannot be asked of the model as strict structured output: Object schema at `properties/tags` must set `additionalProperties: false` to be compatible with strict Structured Outputs.',
      'seq.yaml:5: input_type: "Mood" is an Enum of custom_types.py (line 5); the input_type must be a model',
    ]);
  });

  it('reads custom_types.js before custom_types.py: zod 4 schemas and JSON Schemas, exported by name', () => {
    const js = `const { z } = require(${JSON.stringify(require.resolve('zod'))});
exports.NumbersInput = z.object({ number_1: z.number().int(), number_2: z.number().int().default(0) });
exports.AddOutput = { type: 'object', properties: { result: { type: 'integer' } }, required: ['result'] };
`;
    const [a] = load({ 'adder.yaml': sequential('Adder', 'NumbersInput', 'AddOutput'), 'custom_types.js': js, 'custom_types.py': NUMBERS });
    expect(a!.inputSchema!.origin).toBe('custom_types.js');
    expect(a!.inputSchema!.parse({ number_1: 1 })).toEqual({ ok: true, value: { number_1: 1, number_2: 0 } });
    expect(a!.inputSchema!.parse({ number_1: 'x' })).toEqual({
      ok: false,
      errors: [{ field: 'number_1', message: 'Invalid input: expected number, received string' }],
    });
    expect(a!.outputSchema!.type.parse({ result: 'x' })).toMatchObject({ ok: false, errors: [{ field: 'result' }] });
    expect(a!.outputSchema!.responseFormat.schema).toEqual({
      type: 'object',
      properties: { result: { type: 'integer' } },
      required: ['result'],
      additionalProperties: false,
    });
  });

  it('a custom_types.js that fails to load, or exports something else, is a problem of that file', () => {
    expect(problems({ 'a.yaml': sequential('A', 'NumbersInput'), 'custom_types.js': 'throw new Error("boom");\n' })).toEqual([
      'custom_types.js: cannot load the module: boom',
    ]);
    expect(problems({ 'a.yaml': sequential('A', 'NumbersInput'), 'custom_types.js': 'exports.NumbersInput = 42;\n' })).toEqual([
      'custom_types.js: export "NumbersInput" is neither a zod schema nor a JSON Schema object',
    ]);
  });

  it('skagents/v2alpha1 reads output_type only; tealagents/v1alpha1 ignores both, as upstream', () => {
    const v2 =
      'apiVersion: skagents/v2alpha1\nname: V2\nversion: 1\ninput_type: Nothing\noutput_type: AddOutput\nspec:\n  agent: {name: a, model: local/echo}\n';
    const v3 =
      'apiVersion: tealagents/v1alpha1\nname: V3\nversion: 1\ninput_type: Nothing\noutput_type: Missing\nspec:\n  agent: {name: a, model: local/echo}\n';
    const [a, b] = load({ 'a.yaml': v2, 'b.yaml': v3, 'custom_types.py': NUMBERS });
    expect(a!.inputSchema).toBeUndefined();
    expect(a!.inputType).toBe('BaseMultiModalInput');
    expect(a!.outputSchema!.type.name).toBe('AddOutput');
    expect(b!.outputSchema).toBeUndefined();
  });

  it("resolves upstream's standard types without a custom types file", () => {
    const [a] = load({ 'a.yaml': sequential('A', 'BaseInputWithUserContext', 'BaseEmbeddedImage') });
    expect(a!.inputSchema).toBeUndefined();
    expect(a!.outputSchema!.type.origin).toBe('sk_agents.ska_types');
    expect(a!.outputSchema!.responseFormat.schema).toMatchObject({ required: ['embedded_image'], additionalProperties: false });
  });

  it('a file nested too deeply for the reader is a problem at its line, like every other (not "cannot read the file", not a crash)', () => {
    const deep = `${'list['.repeat(300)}int${']'.repeat(300)}`;
    expect(
      problems({ 'a.yaml': sequential('A', 'Deep'), 'custom_types.py': `from pydantic import BaseModel\n\n\nclass Deep(BaseModel):\n    x: ${deep}\n` }),
    ).toEqual(['custom_types.py:5: Python syntax: brackets are nested more than 200 levels deep (Python allows 200)']);
    let chain = 'from pydantic import BaseModel\n\nclass C3000(BaseModel):\n    x: int\n';
    for (let i = 2999; i >= 0; i--) chain += `\nclass C${i}(BaseModel):\n    next: C${i + 1}\n`;
    expect(problems({ 'a.yaml': sequential('A', 'C0'), 'custom_types.py': chain })).toEqual([
      `custom_types.py:${3 + 3 * 3000}: class C0: its values nest 3001 levels deep (C0 → C1 → C2 → … → C3000), deeper than the 64 levels a JSON body may have`,
    ]);
  });

  it('two custom_types.py merged into one, each defining class Agent: accepted as Python runs it (the later definition wins), with a warning naming both lines', () => {
    const merged = `from typing import List

from semantic_kernel.kernel_pydantic import KernelBaseModel


class Agent(KernelBaseModel):
    name: str


class SelectedAgent(KernelBaseModel):
    agent_name: str

from sk_agents.ska_types import BaseInput


class Agent(KernelBaseModel):
    name: str
    description: str


class GeneralInput(BaseInput):
    agents: List[Agent]
`;
    const dir = writeDir({
      'general.yaml': sequential('General', 'GeneralInput'),
      'selector.yaml': sequential('Selector', 'BaseInput', 'SelectedAgent'),
      'custom_types.py': merged,
    });
    const warnings: string[] = [];
    const [general, selector] = loadAgentConfigs(dir, undefined, (w) => warnings.push(w));
    const file = join(dir, 'custom_types.py');
    expect(warnings).toEqual([`${file}:16: class Agent is defined again (first at ${file}:6): the later definition is used, as in Python`]);
    expect(general!.inputSchema!.parse({ agents: [{ name: 'Writer' }] })).toEqual({
      ok: false,
      errors: [{ field: 'agents.0.description', message: 'Field required' }],
    });
    expect(general!.inputSchema!.schema).toMatchObject({ $defs: { Agent: { required: ['name', 'description'] } } });
    expect(selector!.outputSchema!.type.origin).toBe('custom_types.py:10');
  });
});
