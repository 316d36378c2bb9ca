import type { LlmResponseFormat } from '../../llm/llm-client.port';
import type { JsonSchema, ParseResult } from './model-types';

export type { JsonSchema, ParseResult } from './model-types';

/**
 * A custom `input_type` or `output_type`, wherever it was defined (a `custom_types.py` model, a zod
 * schema or a JSON Schema exported by `custom_types.ts`/`.js`): its JSON Schema and a validator.
 */
export interface DataType {
  name: string;
  /** Where it is defined, for messages: `custom_types.py:12` or `custom_types.ts`. */
  origin: string;
  /** JSON Schema (2020-12) of the value: the request body of an input type, the answer of an output type. */
  schema: JsonSchema;
  /** Its top-level property names (`user_context`, `chat_history`, `session_id` have their usual meaning). */
  fields: readonly string[];
  /** Validates a value: the value with defaults filled in, or every problem by dotted field path. */
  parse(value: unknown): ParseResult;
}

/** An `output_type`: the type, and what the model is asked for (strict structured output). */
export interface OutputType {
  type: DataType;
  responseFormat: LlmResponseFormat;
}
