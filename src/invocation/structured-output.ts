import type { OutputType } from '../agents/custom-types/data-type';
import { DomainError, FieldError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { addUsage, LlmMessage, LlmResponseFormat, TokenUsage } from '../llm/llm-client.port';
import type { AgentRunResult } from './tool-loop';

/** One run of the agent with structured output asked of every model turn. */
export type StructuredRun = (conversation: readonly LlmMessage[], options: { responseFormat: LlmResponseFormat; stream: boolean }) => Promise<AgentRunResult>;

export interface StructuredAnswer {
  /** The accepted answer's text, exactly as the model wrote it (`output_raw`). */
  content: string;
  /** The parsed, validated answer, defaults filled in (`output_pydantic`). */
  value: unknown;
  /** Both attempts' usage when a repair was needed. */
  usage: TokenUsage;
}

/**
 * Runs an agent whose config names an `output_type`: the model is asked for strict structured
 * output (`response_format` `json_schema`), and its answer is parsed and validated against the
 * type. An answer that does not validate (a provider without strict support, a refusal, a model
 * that ignores the format) gets one repair turn: the answer and the validation errors go back to
 * the model, which answers again (not streamed: partials of the first attempt may already be out).
 * A second invalid answer is LLM_OUTPUT_INVALID (502) carrying the errors.
 */
export async function runForOutputType(
  run: StructuredRun,
  conversation: readonly LlmMessage[],
  output: OutputType,
  stream: boolean,
): Promise<StructuredAnswer> {
  const responseFormat = output.responseFormat;
  const first = await run(conversation, { responseFormat, stream });
  const checked = checkAnswer(first.content, output);
  if (checked.ok) return { content: first.content, value: checked.value, usage: first.usage };

  const repair: LlmMessage[] = [
    ...conversation,
    ...first.appended,
    { role: 'assistant', content: first.content },
    { role: 'user', content: repairPrompt(output.type.name, checked.errors) },
  ];
  const second = await run(repair, { responseFormat, stream: false });
  const usage = addUsage(first.usage, second.usage);
  const again = checkAnswer(second.content, output);
  if (again.ok) return { content: second.content, value: again.value, usage };
  throw new DomainError(
    ErrorCode.LLM_OUTPUT_INVALID,
    `The model's answer does not match the output type ${output.type.name}, also after one repair attempt: ${again.errors.map((e) => `${e.field || '(answer)'}: ${e.message}`).join('; ')}`,
    { errors: again.errors },
  );
}

function checkAnswer(text: string, output: OutputType): { ok: true; value: unknown } | { ok: false; errors: FieldError[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, errors: [{ field: '', message: `the answer is not JSON (${(e as Error).message})` }] };
  }
  return output.type.parse(value);
}

function repairPrompt(typeName: string, errors: FieldError[]): string {
  const lines = errors.map((e) => `- ${e.field || '(the whole answer)'}: ${e.message}`);
  return `Your answer does not match the required JSON schema ${typeName}:\n${lines.join('\n')}\nAnswer again with only one JSON object that matches the schema.`;
}
