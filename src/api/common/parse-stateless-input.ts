import { AgentDefinition } from '../../agents/config/agent-definition';
import type { DataType } from '../../agents/custom-types/data-type';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { validateBody } from '../../common/validation/validate-body';
import type { StatelessInput } from '../../invocation/stateless-input';
import { StatelessInputDto } from './dto/stateless-input.dto';

const TEXT_ONLY = new Set(['BaseInput', 'BaseInputWithUserContext']);
const WITH_USER_CONTEXT = new Set(['BaseInputWithUserContext', 'BaseMultiModalInputWithUserContext']);

/**
 * The body of a stateless (v1/v2) request, read as the agent's input type reads it. Upstream's
 * pydantic models ignore keys they do not declare, so `user_context` reaches the model only when
 * the type has it (`BaseInputWithUserContext`, `BaseMultiModalInputWithUserContext`, or a custom
 * type with that field); v2alpha1's body is always `BaseMultiModalInput`. A custom input type
 * validates the whole body (422 naming each field) and its fields become the Sequential template's.
 */
export function parseStatelessInput(agent: AgentDefinition, body: unknown): StatelessInput {
  if (agent.inputSchema) return parseCustomInput(agent.inputSchema, body);
  const known = WITH_USER_CONTEXT.has(agent.inputType) ? body : withoutKey(body, 'user_context');
  const input = validateBody(StatelessInputDto, known);
  if (TEXT_ONLY.has(agent.inputType)) {
    const errors = (input.chat_history ?? []).flatMap((m, i) =>
      m.items
        .map((item, j) => ({ item, j }))
        .filter(({ item }) => item.content_type !== 'text')
        .map(({ j }) => ({ field: `chat_history.${i}.items.${j}.content_type`, message: `${agent.inputType} accepts text items only` })),
    );
    if (errors.length) {
      throw new DomainError(ErrorCode.VALIDATION_FAILED, `${agent.inputType} accepts text items only`, { errors });
    }
  }
  return input;
}

function parseCustomInput(type: DataType, body: unknown): StatelessInput {
  if (!isObject(body)) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, 'The request body must be a JSON object', {
      errors: [{ field: '', message: 'the body must be a JSON object' }],
    });
  }
  const parsed = type.parse(body);
  if (!parsed.ok) {
    throw new DomainError(
      ErrorCode.VALIDATION_FAILED,
      `Invalid request body for ${type.name}: ${parsed.errors.map((e) => `${e.field || '(body)'}: ${e.message}`).join('; ')}`,
      { errors: parsed.errors },
    );
  }
  const fields = parsed.value as Record<string, unknown>;
  // The fields upstream's handlers read by name keep their meaning; they pass the same checks as
  // in the Base* types (roles, data: URIs for images), under the same field paths.
  const known: Record<string, unknown> = {};
  if (typeof fields.session_id === 'string') known.session_id = fields.session_id;
  if (Array.isArray(fields.chat_history) && fields.chat_history.every((m) => isObject(m) && 'role' in m && ('content' in m || 'items' in m))) {
    known.chat_history = fields.chat_history;
  }
  if (isObject(fields.user_context)) {
    known.user_context = Object.fromEntries(Object.entries(fields.user_context).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  }
  return { ...validateBody(StatelessInputDto, known), fields };
}

function withoutKey(body: unknown, key: string): unknown {
  if (!isObject(body) || !(key in body)) return body;
  const { [key]: _dropped, ...rest } = body;
  return rest;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
