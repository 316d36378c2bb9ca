import type { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchema } from './tool.port';

/** Checks a tool's arguments; returns the problems as one readable line, or undefined when valid. */
export type ArgsValidator = (args: unknown) => string | undefined;

// The validator the MCP SDK itself uses (ajv with formats, all errors): a real JSON-schema
// implementation without a dependency of our own. Made on the first tool: agents without tools do
// not load ajv.
let provider: AjvJsonSchemaValidator | undefined;

/**
 * Compiles a tool's parameter schema once. `$schema` is dropped first: the MCP and OpenAPI worlds
 * mix draft-07 and 2020-12 declarations, and the keywords tools use are the same in both. Throws
 * when the schema itself is invalid (a plugin's bad schema then fails the boot).
 */
export function compileArgsValidator(schema: JsonSchema): ArgsValidator {
  const { $schema: _ignored, ...rest } = schema;
  provider ??= new (require('@modelcontextprotocol/sdk/validation/ajv') as typeof import('@modelcontextprotocol/sdk/validation/ajv')).AjvJsonSchemaValidator();
  const validate = provider.getValidator(rest as never);
  return (args) => {
    const r = validate(args);
    return r.valid ? undefined : r.errorMessage.replace(/\bdata\b/g, 'arguments');
  };
}

/** Parses the model's argument text: a JSON object, or an empty string meaning `{}`. */
export function parseArguments(text: string): { args: Record<string, unknown> } | { error: string } {
  if (!text.trim()) return { args: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { error: `the arguments are not valid JSON (${(e as Error).message})` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { error: 'the arguments must be a JSON object' };
  }
  return { args: value as Record<string, unknown> };
}
