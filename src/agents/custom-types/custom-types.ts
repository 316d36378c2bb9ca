import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { BASE_INPUT_TYPES } from '../config/agent-file.schema';
import { FieldProblem, formatProblem } from '../config/config-problems';
import type { LocateField } from '../config/parse-agent-yaml';
import type { DataType, OutputType } from './data-type';
import { jsDataType, loadTypesModule } from './js-types';
import { modelJsonSchema, TypeRegistry, validateModel } from './model-types';
import { PythonTypesFile, readPythonTypes } from './python-models';
import { SKA_TYPES } from './ska-types';
import { responseFormatFor } from './response-format';

/** Upstream's auto-discovered `custom_types.py` beside the config; ours also in TS or JS. */
const MODULE_FILES = ['custom_types.ts', 'custom_types.js', 'custom_types.cjs', 'custom_types.mjs'];
const PYTHON_FILE = 'custom_types.py';

/** The names upstream's TypeLoader resolves without a custom module. */
const STANDARD_TYPES = new Set<string>([...BASE_INPUT_TYPES, 'BaseEmbeddedImage']);

const TYPE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface AgentTypes {
  /** A custom `input_type` (skagents/v1): the request body. */
  input?: DataType;
  /** `output_type` (skagents/v1 and v2alpha1): the model answers in this shape. */
  output?: OutputType;
}

export interface AgentTypesResult {
  types: AgentTypes;
  /** Problems of the agent file itself (input_type, output_type), with their lines. */
  fieldProblems: FieldProblem[];
  /** Problems of the types files, already formatted (`custom_types.py:12: ...`), each reported once. */
  fileProblems: string[];
  /** What the types files do that works but deserves a look (a class defined again), formatted alike, each once. */
  fileWarnings: string[];
}

interface TypesDir {
  module?: { file: string } & ({ exports: Record<string, unknown> } | { error: string });
  python?: { file: string } & ({ types: PythonTypesFile } | { error: string });
}

/**
 * Finds the `input_type` / `output_type` of each agent file: upstream's four `Base*` input types
 * (kept as today: the DTO path), or a custom type from the directory of the file. A name is looked
 * up in `custom_types.ts`/`.js` first (zod schemas or JSON Schemas), then in `custom_types.py`
 * (pydantic models, read as text), then among upstream's standard types. tealagents/v1alpha1
 * ignores both fields, as upstream does; skagents/v2alpha1 reads only `output_type` (its body is
 * fixed, as upstream's). One instance per boot: each types file is read once.
 */
export class CustomTypes {
  private readonly dirs = new Map<string, TypesDir>();
  private readonly reported = new Set<string>();
  private readonly built = new Map<string, DataType | undefined>();

  forAgent(file: string, raw: Record<string, unknown>, locate: LocateField): AgentTypesResult {
    const result: AgentTypesResult = { types: {}, fieldProblems: [], fileProblems: [], fileWarnings: [] };
    const apiVersion = raw.apiVersion;
    if (typeof apiVersion !== 'string' || !apiVersion.startsWith('skagents/')) return result;
    const v1 = apiVersion !== 'skagents/v2alpha1';
    const problem = (field: string, message: string) => result.fieldProblems.push({ field, line: locate(field), message });

    const inputName = raw.input_type;
    if (v1 && typeof inputName === 'string' && TYPE_NAME.test(inputName) && !(BASE_INPUT_TYPES as readonly string[]).includes(inputName)) {
      if (raw.kind === 'Chat') {
        problem(
          'input_type',
          `"${inputName}" is a custom type, and kind: Chat takes only ${BASE_INPUT_TYPES.join(', ')} (as upstream): use kind: Sequential, whose task instructions read the input's fields, or kind: Agent`,
        );
      } else {
        const type = this.find(file, inputName, 'input_type', problem, result);
        if (type && type.schema.type !== 'object' && !type.fields.length) {
          problem('input_type', `"${inputName}" (${type.origin}) is not an object type: the request body is a JSON object`);
        } else if (type) result.types.input = type;
      }
    }

    const outputName = raw.output_type;
    if (typeof outputName === 'string' && TYPE_NAME.test(outputName)) {
      const type = this.find(file, outputName, 'output_type', problem, result);
      if (type) {
        const format = responseFormatFor(type);
        if ('problem' in format) problem('output_type', `"${outputName}" (${type.origin}) ${format.problem}`);
        else result.types.output = { type, responseFormat: format.format };
      }
    }
    result.fileProblems = result.fileProblems.filter((p) => !this.reported.has(p) && this.reported.add(p));
    result.fileWarnings = result.fileWarnings.filter((w) => !this.reported.has(w) && this.reported.add(w));
    return result;
  }

  private find(
    file: string,
    name: string,
    field: string,
    problem: (field: string, message: string) => void,
    { fileProblems, fileWarnings }: Pick<AgentTypesResult, 'fileProblems' | 'fileWarnings'>,
  ): DataType | undefined {
    const dir = this.dir(dirname(file));
    const searched: string[] = [];
    if (dir.module) {
      searched.push(basename(dir.module.file));
      if ('error' in dir.module) {
        fileProblems.push(formatProblem(dir.module.file, { field: '', message: `cannot load the module: ${dir.module.error}` }));
        return undefined;
      }
      if (Object.hasOwn(dir.module.exports, name)) {
        const key = `${dir.module.file}#${name}`;
        if (!this.built.has(key)) {
          const t = jsDataType(name, dir.module.exports[name], dir.module.file);
          if ('problem' in t) fileProblems.push(formatProblem(dir.module.file, { field: '', message: t.problem }));
          this.built.set(key, 'problem' in t ? undefined : t);
        }
        return this.built.get(key);
      }
    }
    if (dir.python) {
      const py = dir.python;
      searched.push(PYTHON_FILE);
      if ('error' in py) {
        fileProblems.push(formatProblem(py.file, { field: '', message: py.error }));
        return undefined;
      }
      for (const r of py.types.redefinitions) {
        fileWarnings.push(
          formatProblem(py.file, {
            field: '',
            line: r.line,
            message: `class ${r.name} is defined again (first at ${py.file}:${r.earlier}): the later definition is used, as in Python`,
          }),
        );
      }
      if (py.types.problems.length) {
        // The file is read whole, as Python imports it whole: nothing of it is used until all of it is understood.
        fileProblems.push(...py.types.problems.map((p) => formatProblem(py.file, { field: '', line: p.line, message: p.message })));
        return undefined;
      }
      const line = py.types.lines.get(name);
      if (line !== undefined) {
        if (py.types.registry.get(name)?.kind === 'enum') {
          problem(field, `"${name}" is an Enum of ${PYTHON_FILE} (line ${line}); the ${field} must be a model`);
          return undefined;
        }
        return this.python(`${py.file}#${name}`, name, py.types.registry, `${PYTHON_FILE}:${line}`);
      }
    }
    if (STANDARD_TYPES.has(name)) return this.python(`ska#${name}`, name, SKA_TYPES, 'sk_agents.ska_types');
    if (!searched.length) {
      problem(
        field,
        `no type "${name}": it is none of upstream's standard types (${[...STANDARD_TYPES].join(', ')}), and no ${PYTHON_FILE}, custom_types.ts or custom_types.js beside this file defines it`,
      );
    } else {
      const defined = [
        ...(dir.module && 'exports' in dir.module ? Object.keys(dir.module.exports).filter((k) => k !== 'default') : []),
        ...(dir.python && 'types' in dir.python ? dir.python.types.lines.keys() : []),
      ];
      problem(field, `no type "${name}" in ${searched.join(' or ')} beside this file${defined.length ? ` (it defines ${defined.join(', ')})` : ''}`);
    }
    return undefined;
  }

  private python(key: string, name: string, registry: TypeRegistry, origin: string): DataType {
    let t = this.built.get(key);
    if (!t) {
      const decl = registry.get(name);
      t = {
        name,
        origin,
        schema: modelJsonSchema(name, registry),
        fields: decl?.kind === 'model' ? decl.fields.map((f) => f.name) : [],
        parse: (v) => validateModel(name, registry, v),
      };
      this.built.set(key, t);
    }
    return t;
  }

  private dir(path: string): TypesDir {
    let dir = this.dirs.get(path);
    if (dir) return dir;
    dir = {};
    const moduleFile = MODULE_FILES.map((f) => join(path, f)).find((f) => existsSync(f));
    if (moduleFile) dir.module = { file: moduleFile, ...loadTypesModule(moduleFile) };
    const pyFile = join(path, PYTHON_FILE);
    if (existsSync(pyFile)) {
      try {
        dir.python = { file: pyFile, types: readPythonTypes(readFileSync(pyFile, 'utf8')) };
      } catch (e) {
        dir.python = { file: pyFile, error: `cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
      }
    }
    this.dirs.set(path, dir);
    return dir;
  }
}
