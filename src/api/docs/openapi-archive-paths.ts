import { ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('ProblemDetails') } } });
const json = (description: string) => ({ description, content: { 'application/json': { schema: { type: 'object' } } } });

/**
 * A task's timeline and plans (docs/archive.md), added to the paths the builder made. Every
 * operation has a `description` (the Assistant orchestrator needs one).
 */
export function addArchivePaths(paths: Record<string, Record<string, Operation>>, p: string, tags: string[], taskParam: unknown): void {
  paths[`${p}/tasks/{task_id}/events`] = {
    get: {
      operationId: 'taskEvents',
      summary: "The task's timeline",
      description:
        "The task's events in order (request accepted, model calls, plans proposed, decisions, refinements, tool calls, the request's end, the task's deletion), for its owner or a caller with the audit role; also after the task was deleted, when an audit archive (TA_ARCHIVE_URL) keeps it. Keyset pages: pass next_cursor back as cursor.",
      tags,
      parameters: [
        taskParam,
        { name: 'limit', in: 'query', description: 'Events per page, 1 to 1000 (default 500)', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        { name: 'cursor', in: 'query', description: 'The next_cursor of the previous page', schema: { type: 'string' } },
      ],
      responses: {
        '200': json('{events: [...], next_cursor}'),
        '404': problem("Unknown task, or another user's (without the audit role)"),
        '422': problem('A limit out of range, or a cursor this API did not issue'),
      },
    },
  };
  paths[`${p}/tasks/{task_id}/plans`] = {
    get: {
      operationId: 'taskPlans',
      summary: "The task's plans",
      description:
        "Every pause of the task's requests as a plan with its status (proposed, approved, rejected, refined, expired, executing, completed, failed), steps, max risk and timings (approved_at, executed_at, completed_at, duration_ms); read from the archive once the task is gone.",
      tags,
      parameters: [taskParam],
      responses: { '200': json('{plans: [...]}'), '404': problem("Unknown task, or another user's (without the audit role)") },
    },
  };
}
