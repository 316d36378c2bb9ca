import { plainToInstance } from 'class-transformer';
import { validateSync } from '../../common/validation/class-validator-parts';
import { AgentFileConfig } from './agent-file.schema';
import { checkAgentShape, LocalModelCheck } from './check-agent-shape';
import { collectConfigProblems, FieldProblem } from './config-problems';

export interface ValidatedAgentFile {
  /** Set only when there is no problem. */
  config?: AgentFileConfig;
  problems: FieldProblem[];
}

/**
 * Validates one parsed agent file: the per-field schema (one message per field, unknown keys under
 * `spec` refused), then the cross-field rules. Every problem is returned, none short-circuits.
 */
export function validateAgentFile(raw: Record<string, unknown>, isKnownLocalModel: LocalModelCheck, knownLocalModels: string[]): ValidatedAgentFile {
  const config = plainToInstance(AgentFileConfig, raw);
  const errors = validateSync(config, {
    // One message per field: the first failing rule (each rule checks type and range together).
    stopAtFirstError: true,
    // Unknown keys are reported; collectConfigProblems keeps only those under `spec`.
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: false,
  });
  const problems = [...collectConfigProblems(errors), ...checkAgentShape(config, isKnownLocalModel, knownLocalModels)];
  if (problems.length) return { problems };
  dropNulls(config.spec);
  return { config, problems };
}

/**
 * `temperature:` with no value means "not set" (pydantic `Optional`); the rest of the code only
 * knows `undefined`, so nulls are removed once here. Fields with defaults refuse null in the schema.
 */
function dropNulls(value: unknown): void {
  if (value instanceof Map) return value.forEach(dropNulls);
  if (Array.isArray(value)) return value.forEach(dropNulls);
  if (typeof value !== 'object' || value === null) return;
  for (const [k, v] of Object.entries(value)) {
    if (v === null) delete (value as Record<string, unknown>)[k];
    else dropNulls(v);
  }
}
