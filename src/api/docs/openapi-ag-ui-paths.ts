import { ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('ProblemDetails') } } });

/** AG-UI's `RunAgentInput` (@ag-ui/core 1.0.0), as far as this server reads it. */
const runAgentInput = {
  type: 'object',
  required: ['threadId', 'runId', 'messages'],
  properties: {
    threadId: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$', description: 'The task id: a new thread creates the task, owned by the caller' },
    runId: { type: 'string', maxLength: 128, description: 'The request id of a new turn when it is a UUID (else a new one: RUN_STARTED metadata.request_id)' },
    messages: {
      type: 'array',
      description:
        'AG-UI messages. Only the end is read: the last user message (the new turn), or the tool messages after the last assistant message (client-side tool results). The server keeps the history, so the whole history may be sent.',
      items: { type: 'object', required: ['role'], properties: { id: { type: 'string' }, role: { type: 'string' }, content: {} } },
    },
    resume: {
      type: 'array',
      description: 'Answers to the interrupts of the previous run (every open one): the decision on the pause they name.',
      items: {
        type: 'object',
        required: ['interruptId', 'status'],
        properties: {
          interruptId: { type: 'string', description: 'The pause_id' },
          status: { type: 'string', enum: ['resolved', 'cancelled'], description: 'cancelled rejects' },
          payload: {
            type: 'object',
            properties: {
              approved: { type: 'boolean', description: 'Required when resolved' },
              toolCallId: { type: 'string', description: 'Decide this call only' },
              reason: { type: 'string', description: 'Why it was rejected (shown to the model)' },
            },
          },
        },
      },
    },
    tools: {
      type: 'array',
      description:
        'Client-side tools the model may call on this run. A run whose model calls them finishes with their TOOL_CALL_* events and outcome.pendingToolCallIds; the next run brings the results as tool messages (paired with the stored calls by toolCallId).',
      items: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' }, description: { type: 'string' }, parameters: { type: 'object' } },
      },
    },
    context: { type: 'array', items: { type: 'object' } },
    state: {},
    forwardedProps: {
      type: 'object',
      properties: { messagesSnapshot: { type: 'boolean', description: 'Send MESSAGES_SNAPSHOT (the server-kept history) before RUN_FINISHED' } },
    },
  },
};

/**
 * `POST /ag-ui` (docs/api.md, "AG-UI"), added to the paths of a stateful agent. Every operation has
 * a `description` (the Assistant orchestrator needs one).
 */
export function addAgUiPaths(paths: Record<string, Record<string, Operation>>, p: string, tags: string[]): void {
  paths[`${p}/ag-ui`] = {
    post: {
      operationId: 'agUiRun',
      summary: 'Run the agent over the AG-UI protocol',
      description:
        "An AG-UI run (RunAgentInput in, AG-UI events out, encoded by @ag-ui/encoder: server-sent events, or protobuf when Accept prefers application/vnd.ag-ui.event+proto over text/event-stream by q-value; */* or no Accept is SSE). threadId is the task (the caller's own), runId the request; the last user message is the new turn. Events: RUN_STARTED, TEXT_MESSAGE_START/CONTENT/END, TOOL_CALL_START/ARGS/END/RESULT, STATE_SNAPSHOT (task status, pending approvals), MESSAGES_SNAPSHOT on request, then RUN_FINISHED (a pause for approval is an interrupt outcome, answered by a run with resume) or RUN_ERROR with the error code. Authentication failures and an input that is no RunAgentInput are problem+json; every other refusal (another user's thread: NOT_OWNER, a stale resume: APPROVAL_ALREADY_DECIDED, a message while an interrupt is open: TASK_BUSY) is a lone RUN_ERROR.",
      tags,
      requestBody: { required: true, content: { 'application/json': { schema: runAgentInput } } },
      responses: {
        '200': {
          description: 'AG-UI events',
          content: {
            'text/event-stream': { schema: { type: 'string', description: 'data: {AG-UI event JSON} per event' } },
            'application/vnd.ag-ui.event+proto': { schema: { type: 'string', format: 'binary', description: 'length-prefixed AG-UI protobuf events' } },
          },
        },
        '401': problem('Not authenticated'),
        '422': problem('The body is not a RunAgentInput'),
      },
    },
  };
}
