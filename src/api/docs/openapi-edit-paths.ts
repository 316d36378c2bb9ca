import { ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

const json = (schema: unknown, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('ProblemDetails') } } });

/**
 * The edit and fork routes of a v3 agent (docs/api.md, Edit and fork), and `?include=superseded` on
 * `GET /tasks/{task_id}`. Every operation has a `description` (the Assistant orchestrator needs one).
 */
export function addEditPaths(paths: Record<string, Record<string, Operation>>, p: string, tags: string[], taskParam: unknown): void {
  const requestParam = {
    name: 'request_id',
    in: 'path',
    required: true,
    description: 'The request whose user turn is replaced',
    schema: { type: 'string', format: 'uuid' },
  };
  const userMessage = { required: true, content: { 'application/json': { schema: ref('UserMessage') } } };
  const refusals = {
    '404': problem('Unknown task or request'),
    '409': problem('TASK_BUSY (a request runs), TASK_PAUSED (decide or cancel first) or REQUEST_SUPERSEDED (edit its replacement)'),
    '422': problem('A field failed validation'),
  };
  const getTask = paths[`${p}/tasks/{task_id}`]?.get;
  if (getTask) {
    getTask.parameters = [
      ...((getTask.parameters as unknown[] | undefined) ?? []),
      {
        name: 'include',
        in: 'query',
        required: false,
        description: '`superseded`: also list the requests an edit replaced (each with `superseded_by`)',
        schema: { type: 'string', enum: ['superseded'] },
      },
    ];
  }
  paths[`${p}/tasks/{task_id}/requests/{request_id}/edit`] = {
    post: {
      operationId: 'editRequest',
      summary: 'Edit a user turn and rerun from it',
      description:
        'Replaces the user turn of the request and reruns the task from the state before it, under a new request id. The edited request and every later one are kept, superseded by the new one (hidden from the model and, unless ?include=superseded, from GET /tasks/{task_id}). Answers as POST "" does.',
      tags,
      parameters: [taskParam, requestParam],
      requestBody: userMessage,
      responses: { '200': json(ref('StateResponse')), ...refusals },
    },
  };
  paths[`${p}/tasks/{task_id}/requests/{request_id}/edit/sse`] = {
    post: {
      operationId: 'editRequestSse',
      summary: 'Edit a user turn and rerun, streamed',
      description: 'As editRequest, with the rerun streamed as server-sent events as POST /sse streams (ending with final-response).',
      tags,
      parameters: [taskParam, requestParam],
      requestBody: userMessage,
      responses: { '200': { description: 'events', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...refusals },
    },
  };
  paths[`${p}/tasks/{task_id}/fork`] = {
    post: {
      operationId: 'forkTask',
      summary: 'Fork the task at a request',
      description:
        'Creates a new task (new id, same session unless session_id is given) holding the completed requests of the conversation up to and including request_id (default: every completed request the model sees). The source task is not changed. Answers 201 with the new task.',
      tags,
      parameters: [taskParam],
      requestBody: {
        required: false,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                request_id: { type: 'string', format: 'uuid', description: 'The last request the fork holds; it must be Completed' },
                session_id: { allOf: [ref('ClientId')], description: "The new task's session (default: the source's)" },
              },
            },
          },
        },
      },
      responses: {
        '201': json(ref('Task'), 'The new task'),
        '404': problem('Unknown task or request'),
        '422': problem('A field failed validation, or the request did not complete'),
      },
    },
  };
}
