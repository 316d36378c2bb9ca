import { ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

const json = (schema: unknown, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('ProblemDetails') } } });

const sessionSummary = {
  type: 'object',
  required: ['session_id', 'task_count', 'created_at', 'last_activity_at', 'title'],
  properties: {
    session_id: { type: 'string' },
    task_count: { type: 'integer', description: "The caller's tasks of this agent in the session" },
    created_at: { type: 'string', format: 'date-time' },
    last_activity_at: { type: 'string', format: 'date-time', description: 'The latest update of any of those tasks' },
    title: { type: 'string', nullable: true, description: "The opening words (at most 60 characters) of the session's first user message" },
  },
};

/**
 * DELETE of a task and of a session, and `GET /sessions` (docs/api.md, Deleting and listing), added
 * to the paths the builder made. Every operation has a `description` (the Assistant orchestrator needs one).
 */
export function addDeleteAndListPaths(paths: Record<string, Record<string, Operation>>, p: string, tags: string[], taskParam: unknown): void {
  const sessionParam = { name: 'session_id', in: 'path', required: true, schema: ref('ClientId') };
  const gone = {
    '204': { description: 'Deleted: nothing of it is left' },
    '503': problem('State store unavailable (a re-run of the same DELETE finishes it)'),
  };
  paths[`${p}/tasks/{task_id}`] = {
    ...paths[`${p}/tasks/{task_id}`],
    delete: {
      operationId: 'deleteTask',
      summary: 'Delete the task',
      description:
        "Deletes one of the caller's tasks and everything of it (requests, messages, approvals, replay log); a running request is canceled first. Another user's or tenant's task, or one already deleted, is 404.",
      tags,
      parameters: [taskParam],
      responses: { ...gone, '404': problem('Unknown task') },
    },
  };
  const getSession = paths[`${p}/sessions/{session_id}`]?.get;
  if (getSession) {
    getSession.description =
      "The caller's tasks of this agent in one session, oldest first, a page at a time (pages are filled after filtering by agent); 404 when the session holds none. limit is 1-100 (default 20).";
  }
  paths[`${p}/sessions/{session_id}`] = {
    ...paths[`${p}/sessions/{session_id}`],
    delete: {
      operationId: 'deleteSession',
      summary: "Delete the caller's tasks of this agent in a session",
      description:
        'Deletes every task of this agent the caller has in the session (up to 10,000 per call: more is 409 TASK_BUSY, call again), as DELETE /tasks/{task_id} does. Tasks of other agents in the same session are kept.',
      tags,
      parameters: [sessionParam],
      responses: {
        ...gone,
        '404': problem('No task of this agent in the session'),
        '409': problem('TASK_BUSY: more than 10,000 tasks; those were deleted, call again'),
      },
    },
  };
  paths[`${p}/sessions`] = {
    get: {
      operationId: 'listSessions',
      summary: "The caller's sessions with this agent (paged)",
      description:
        "The caller's sessions holding tasks of this agent, newest activity first, each with its task count, last activity and title. limit is 1-100 (default 20); next_cursor is null on the last page.",
      tags,
      parameters: [
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        { name: 'cursor', in: 'query', schema: { type: 'string' } },
      ],
      responses: {
        '200': json({
          type: 'object',
          required: ['sessions', 'next_cursor'],
          properties: { sessions: { type: 'array', items: sessionSummary }, next_cursor: { type: 'string', nullable: true } },
        }),
        '422': problem('limit or cursor is invalid'),
      },
    },
  };
}
