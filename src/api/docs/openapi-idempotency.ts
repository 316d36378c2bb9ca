import { ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

/** The operations that take an `Idempotency-Key` (docs/api.md, "Retries with Idempotency-Key"), by path suffix and method. */
const GUARDED: [string, 'post' | 'delete'][] = [
  ['', 'post'],
  ['/sse', 'post'],
  ['/tealagents/v1alpha1/resume/{request_id}', 'post'],
  ['/tealagents/v1alpha1/resume/{request_id}/sse', 'post'],
  ['/tasks/{task_id}/cancel', 'post'],
  ['/tasks/{task_id}/requests/{request_id}/edit', 'post'],
  ['/tasks/{task_id}/requests/{request_id}/edit/sse', 'post'],
  ['/tasks/{task_id}/fork', 'post'],
  ['/tasks/{task_id}', 'delete'],
  ['/ag-ui', 'post'],
];

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('ProblemDetails') } } });

/**
 * Adds the optional `Idempotency-Key` header, and the answers it brings (400 for a malformed key,
 * 422 for a key used with another request), to every operation of a stateful agent that takes it.
 */
export function addIdempotencyKey(paths: Record<string, Record<string, Operation>>, p: string): void {
  for (const [suffix, method] of GUARDED) {
    const op = paths[`${p}${suffix}`]?.[method];
    if (!op) continue;
    const parameters = (op.parameters as unknown[] | undefined) ?? [];
    op.parameters = [
      ...parameters,
      {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'Any 1 to 255 printable ASCII characters (a UUID is best). A repeat of this request with the same key, within TA_IDEMPOTENCY_TTL_SECONDS, runs nothing again and answers what the first one answered (its outcome, waited for while it runs; on an SSE route, a replay of its stream). Per tenant, user and agent.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
    ];
    const responses = (op.responses as Record<string, unknown> | undefined) ?? {};
    op.responses = {
      ...responses,
      '400': problem('INVALID_IDEMPOTENCY_KEY: an Idempotency-Key that is empty, over 255 characters or not printable ASCII'),
      '422': problem('A field failed validation, or IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was first used with another route or body'),
    };
  }
}
