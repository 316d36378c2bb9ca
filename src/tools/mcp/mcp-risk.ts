import type { RiskLevel } from '../tool.port';

export interface McpToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
}

/**
 * CONFIG.md, with the MCP spec's defaults (`readOnlyHint` false, `destructiveHint` true):
 * read-only → `read_only`; otherwise explicitly non-destructive → `write_low_risk`; otherwise
 * (destructive, or nothing said) → `write_high_risk`.
 */
export function riskFromAnnotations(a: McpToolAnnotations | undefined): RiskLevel {
  if (a?.readOnlyHint === true) return 'read_only';
  if (a?.destructiveHint === false) return 'write_low_risk';
  return 'write_high_risk';
}

/** Repeating it is harmless: declared idempotent, or read-only. */
export function idempotentFromAnnotations(a: McpToolAnnotations | undefined): boolean {
  return a?.idempotentHint === true || a?.readOnlyHint === true;
}
