/**
 * Upstream teal-agents' tealagents/v1alpha1 wire models, transcribed by hand from its pydantic
 * classes (`sk_agents/tealagents/models.py`, `ska_types.py`, `extra_data_collector.py`) and from
 * Semantic Kernel 1.39's `FunctionCallContent` (what `HitlResponse.tool_calls` holds), plus a
 * checker that reports every way a JSON value departs from one. A drop-in replacement must send
 * every field a model has (a client may index any of them) with its type, in the model's order (as
 * pydantic serializes them); fields we add come after them and are allowed only where a check
 * names them, so each addition is deliberate.
 */

export type Shape =
  | 'str'
  | 'int'
  | 'dict'
  | 'any'
  | { literal: readonly string[] }
  /** `X | None` */
  | { optional: Shape }
  | { list: Shape }
  | { union: readonly Shape[] }
  | Model;

export interface Model {
  model: string;
  fields: Record<string, Shape>;
}

const str = 'str' as const;
const ids = { task_id: str, session_id: str, request_id: str };

export const TokenUsage: Model = { model: 'TokenUsage', fields: { completion_tokens: 'int', prompt_tokens: 'int', total_tokens: 'int' } };
const ExtraDataElement: Model = { model: 'ExtraDataElement', fields: { key: str, value: str } };
export const ExtraData: Model = { model: 'ExtraData', fields: { items: { list: ExtraDataElement } } };

export const TealAgentsResponse: Model = {
  model: 'TealAgentsResponse',
  fields: { ...ids, output: str, source: { optional: str }, token_usage: TokenUsage, extra_data: { optional: ExtraData } },
};

export const TealAgentsPartialResponse: Model = {
  model: 'TealAgentsPartialResponse',
  fields: { ...ids, output_partial: str, source: { optional: str } },
};

/** SK `FunctionCallContent.model_dump()`: KernelContent's fields, then the call's. */
export const FunctionCallContent: Model = {
  model: 'FunctionCallContent',
  fields: {
    inner_content: 'any',
    ai_model_id: { optional: str },
    metadata: 'dict',
    content_type: { literal: ['function_call'] },
    id: { optional: str },
    index: { optional: 'int' },
    name: { optional: str },
    function_name: str,
    plugin_name: { optional: str },
    arguments: { optional: { union: [str, 'dict'] } },
  },
};

export const HitlResponse: Model = {
  model: 'HitlResponse',
  fields: { ...ids, message: str, approval_url: str, rejection_url: str, tool_calls: { list: FunctionCallContent } },
};

export const RejectedToolResponse: Model = { model: 'RejectedToolResponse', fields: { ...ids, message: str } };

/** `TaskStatus` / `StateResponse.status` (no "Canceled": upstream's literal lacks it). */
export const TASK_STATUS = ['Running', 'Paused', 'Completed', 'Failed'] as const;

export const StateResponse: Model = {
  model: 'StateResponse',
  fields: {
    session_id: str,
    task_id: str,
    request_id: str,
    status: { literal: TASK_STATUS },
    content: { union: [RejectedToolResponse, HitlResponse, TealAgentsResponse] },
  },
};

/** Upstream's SSE event names (`SseEventType`). */
export const SSE_EVENTS = ['intermediate-task-response', 'partial-response', 'final-response', 'unknown'] as const;

/** Extra keys allowed per model name, for one check. */
export type Extras = Partial<Record<string, readonly string[]>>;

/** Every departure of `value` from `shape`, as `path: problem` (empty when it fits). */
export function mismatches(value: unknown, shape: Shape, extras: Extras = {}, path = '$'): string[] {
  if (shape === 'any') return [];
  if (shape === 'str') return typeof value === 'string' ? [] : [`${path}: expected str, got ${show(value)}`];
  if (shape === 'int') return Number.isInteger(value) ? [] : [`${path}: expected int, got ${show(value)}`];
  if (shape === 'dict') return isObject(value) ? [] : [`${path}: expected dict, got ${show(value)}`];
  if ('literal' in shape) return shape.literal.includes(value as string) ? [] : [`${path}: expected one of ${shape.literal.join('|')}, got ${show(value)}`];
  if ('optional' in shape) return value === null ? [] : mismatches(value, shape.optional, extras, path);
  if ('list' in shape) {
    if (!Array.isArray(value)) return [`${path}: expected list, got ${show(value)}`];
    return value.flatMap((v, i) => mismatches(v, shape.list, extras, `${path}[${i}]`));
  }
  if ('union' in shape) {
    const each = shape.union.map((s) => mismatches(value, s, extras, path));
    return each.some((m) => m.length === 0) ? [] : [`${path}: fits no member of the union (${each.map((m) => m.join('; ')).join(' | ')})`];
  }
  return modelMismatches(value, shape, extras, path);
}

function modelMismatches(value: unknown, model: Model, extras: Extras, path: string): string[] {
  if (!isObject(value)) return [`${path}: expected ${model.model} object, got ${show(value)}`];
  const out: string[] = [];
  for (const [key, shape] of Object.entries(model.fields)) {
    if (!(key in value)) out.push(`${path}.${key}: missing (${model.model})`);
    else out.push(...mismatches(value[key], shape, extras, `${path}.${key}`));
  }
  const allowed = new Set(extras[model.model] ?? []);
  const keys = Object.keys(value);
  for (const key of keys) {
    if (!(key in model.fields) && !allowed.has(key)) out.push(`${path}.${key}: not a field of ${model.model}`);
  }
  // pydantic dumps fields in declaration order (a parent's first); ours follow upstream's.
  const order = keys.filter((k) => k in model.fields);
  const declared = Object.keys(model.fields);
  const lastOwn = keys.findIndex((k) => !(k in model.fields));
  if (order.join() !== declared.filter((k) => k in value).join() || (lastOwn >= 0 && keys.slice(lastOwn).some((k) => k in model.fields))) {
    out.push(`${path}: keys ${keys.join(', ')} are not in ${model.model}'s order (${declared.join(', ')}, then ours)`);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}
