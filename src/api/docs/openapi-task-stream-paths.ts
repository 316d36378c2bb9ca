import { ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('ProblemDetails') } } });

/**
 * `GET /tasks/{task_id}/stream` (docs/api.md, Streaming): reattach to a task's stream, added to the
 * paths the builder made. Every operation has a `description` (the Assistant orchestrator needs one).
 */
export function addTaskStreamPaths(paths: Record<string, Record<string, Operation>>, p: string, tags: string[], taskParam: unknown): void {
  paths[`${p}/tasks/{task_id}/stream`] = {
    get: {
      operationId: 'streamTask',
      summary: "Reattach to the task's stream",
      description:
        "Server-sent events of the task's current (running) or last request: the events after Last-Event-ID ({request seq}-{n}; the header wins over ?last_event_id=, which a browser EventSource needs on its first connect), or all of them without one, then the rest live, then the final event (final-response or error) and the stream closes. Works with a browser EventSource.",
      tags,
      parameters: [
        taskParam,
        {
          name: 'last_event_id',
          in: 'query',
          description: 'The last event id received, as the Last-Event-ID header (which wins when both are given)',
          schema: { type: 'string', pattern: '^\\d+-\\d+$' },
        },
        {
          name: 'Last-Event-ID',
          in: 'header',
          description: 'The last event id received ({request seq}-{n}); an EventSource sends it when it reconnects',
          schema: { type: 'string', pattern: '^\\d+-\\d+$' },
        },
      ],
      responses: {
        '200': { description: 'The events', content: { 'text/event-stream': { schema: { type: 'string' } } } },
        '204': { description: 'The id given is already the final event of the request (stops an EventSource from reconnecting)' },
        '401': problem("Another user's task"),
        '404': problem('Unknown task or request'),
        '422': problem('last_event_id is not an event id of this API'),
      },
    },
  };
}
