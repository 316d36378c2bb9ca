import { getMetadataStorage, ValidationError } from '../../common/validation/class-validator-parts';
import { AgentSpecConfig } from './agent.schema';
import { SpecConfig } from './agent-file.schema';

/** One problem in one agent file: a dotted field path (`spec.agents.0.model`) and what is wrong. */
export interface FieldProblem {
  /** Empty for a problem with the whole file. */
  field: string;
  message: string;
  /** 1-based, where the file shows the problem (the key of the field, or of its nearest ancestor). */
  line?: number;
  column?: number;
}

/** `file:line: field.path: message`, the shape compilers use, so editors and terminals link to the line. */
export function formatProblem(file: string, p: FieldProblem): string {
  const where = p.line ? `:${p.line}${p.column ? `:${p.column}` : ''}` : '';
  return `${file}${where}: ${p.field ? `${p.field}: ` : ''}${p.message}`;
}

/**
 * Flattens class-validator's error tree for the agent YAML. The validators in field-validators.ts
 * already word their messages without the field name; this adds the unknown-key rule: keys under
 * `spec` are strict (a typo is an error, with a "did you mean"), keys elsewhere are kept, as
 * upstream's `extra="allow"` models do.
 */
export function collectConfigProblems(errors: ValidationError[], parent = ''): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    for (const [constraint, message] of Object.entries(e.constraints ?? {})) {
      if (constraint === 'whitelistValidation') {
        if (field.startsWith('spec.')) out.push({ field, message: unknownFieldMessage(e.property, e.target) });
      } else if (constraint === 'nestedValidation') {
        out.push({ field, message: 'must be a mapping' });
      } else {
        out.push({ field, message });
      }
    }
    if (e.children?.length) out.push(...collectConfigProblems(e.children, field));
  }
  return out;
}

function unknownFieldMessage(property: string, target: object | undefined): string {
  // Upstream's own MCP examples put the agent's fields directly under spec (teal-agents.md 1.4).
  if (target instanceof SpecConfig && knownFields(AgentSpecConfig).includes(property)) {
    return 'unknown field here: it is an agent field, which belongs under spec.agent';
  }
  const allowed = target ? knownFields(target.constructor) : [];
  const close = allowed
    .map((name) => ({ name, d: editDistance(property.toLowerCase(), name.toLowerCase()) }))
    .filter((c) => c.d <= Math.max(1, Math.floor(property.length / 4)))
    .sort((a, b) => a.d - b.d)[0];
  if (close) return `unknown field; did you mean "${close.name}"?`;
  return allowed.length ? `unknown field (allowed here: ${allowed.join(', ')})` : 'unknown field';
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- class-validator keys its metadata by Function, the type of target.constructor
function knownFields(cls: Function): string[] {
  const metas = getMetadataStorage().getTargetValidationMetadatas(cls, '', true, false);
  return [...new Set(metas.map((m) => m.propertyName))];
}

/** Levenshtein distance; the strings are field names, so the quadratic cost is nothing. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
