import { AgentDefinition } from '../../agents/config/agent-definition';
import type { DataType } from '../../agents/custom-types/data-type';
import { openApiComponents } from './openapi-json-schema';
import { addAgUiPaths } from './openapi-ag-ui-paths';
import { addTaskStreamPaths } from './openapi-task-stream-paths';
import { addArchivePaths } from './openapi-archive-paths';
import { addDeleteAndListPaths } from './openapi-delete-list-paths';
import { addEditPaths } from './openapi-edit-paths';
import { addIdempotencyKey } from './openapi-idempotency';
import { OPENAPI_SCHEMAS, ref } from './openapi-schemas';

type Operation = Record<string, unknown>;

const problem = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: ref('ProblemDetails') } },
});

const json = (schema: unknown, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const sse = (description: string) => ({ description, content: { 'text/event-stream': { schema: { type: 'string' } } } });

/**
 * The OpenAPI document of one agent. Its FIRST path is the `POST ""` invoke route and that
 * operation's `description` is the agent description: the upstream orchestrators discover agents by
 * reading exactly `next(iter(paths.values())).post.description`. EVERY operation has a `description`
 * too: the Assistant orchestrator parses the `get` and `post` of every path as `{description: str}`
 * and drops the agent ("unavailable") when one lacks it, health routes included.
 */
export function buildOpenApi(agent: AgentDefinition): Record<string, unknown> {
  const p = agent.prefix;
  const stateful = agent.module === 'v3';
  const custom = customTypeSchemas(agent);
  const body = ref(stateful ? 'UserMessage' : (custom.input ?? 'BaseMultiModalInput'));
  const errors = {
    '401': problem('Missing or invalid bearer token'),
    '403': problem('Token lacks the required scope or role'),
    '413': problem('Body over the limit, or a message larger than the state store admits'),
    '415': problem('Body is not JSON'),
    '422': problem('A field failed validation'),
    '429': problem('Rate limit of the agent (RATE_LIMITED, with Retry-After and RateLimit headers) or of the model provider'),
    '502': problem('Model provider failed'),
    '504': problem('Model provider timed out'),
    ...(stateful ? { '404': problem('Unknown task'), '409': problem('Task busy'), '503': problem('State store unavailable') } : {}),
  };
  const requestBody = { required: true, content: { 'application/json': { schema: body } } };
  const paths: Record<string, Record<string, Operation>> = {};
  paths[p] = {
    post: {
      operationId: 'invoke',
      summary: stateful ? 'Send a message to the agent' : 'Invoke the agent',
      description: agent.description,
      tags: [agent.source],
      requestBody,
      responses: { '200': json(ref(stateful ? 'StateResponse' : (custom.response ?? 'InvokeResponse'))), ...errors },
    },
  };
  paths[`${p}/sse`] = {
    post: {
      operationId: 'invokeSse',
      summary: 'Invoke the agent, streamed as server-sent events',
      description: `${agent.description}\nInitiate SSE call`,
      tags: [agent.source],
      requestBody,
      responses: { '200': sse('partial-response events, then final-response'), ...errors },
    },
  };
  if (stateful) {
    addStatefulPaths(paths, p, agent);
    addIdempotencyKey(paths, p);
  }
  paths[`${p}/health`] = {
    get: {
      operationId: 'health',
      summary: 'Health',
      description: 'The agent is up: status, version and uptime (upstream HealthStatus).',
      responses: { '200': json({ type: 'object' }) },
    },
  };
  paths[`${p}/health/live`] = {
    get: {
      operationId: 'live',
      summary: 'Liveness',
      description: 'The process answers (upstream LivenessStatus).',
      responses: { '200': json({ type: 'object' }) },
    },
  };
  paths[`${p}/health/ready`] = {
    get: {
      operationId: 'ready',
      summary: 'Readiness (state store and config)',
      description: 'Every dependency answers: 200 when ready, 503 naming the failing check.',
      responses: { '200': json({ type: 'object' }), '503': json({ type: 'object' }, 'Not ready') },
    },
  };
  return {
    openapi: '3.0.3',
    info: { title: agent.name, version: agent.version, description: agent.description },
    paths,
    components: {
      schemas: { ...OPENAPI_SCHEMAS, ...custom.components },
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    },
    security: [{ bearer: [] }],
  };
}

/**
 * A custom `input_type` is the request body and a custom `output_type` types `output_pydantic`, as
 * in upstream's FastAPI document. A custom name that is also one of ours gets a `Custom` prefix.
 */
function customTypeSchemas(agent: AgentDefinition): { input?: string; response?: string; components: Record<string, unknown> } {
  const components: Record<string, unknown> = {};
  const add = (type: DataType): string => {
    const name = type.name in OPENAPI_SCHEMAS ? `Custom${type.name}` : type.name;
    Object.assign(components, openApiComponents(name, type.schema));
    return name;
  };
  const input = agent.inputSchema ? add(agent.inputSchema) : undefined;
  if (!agent.outputSchema) return { input, components };
  const output = add(agent.outputSchema.type);
  const response = `InvokeResponse${output}`;
  components[response] = { allOf: [ref('InvokeResponse'), { type: 'object', properties: { output_pydantic: { allOf: [ref(output)], nullable: true } } }] };
  return { input, response, components };
}

function addStatefulPaths(paths: Record<string, Record<string, Operation>>, p: string, agent: AgentDefinition): void {
  const tags = [agent.source];
  const resumeBody = { required: true, content: { 'application/json': { schema: ref('ResumeRequest') } } };
  const reqParam = { name: 'request_id', in: 'path', required: true, schema: { type: 'string' } };
  const taskParam = { name: 'task_id', in: 'path', required: true, schema: ref('ClientId') };
  paths[`${p}/tealagents/v1alpha1/resume/{request_id}`] = {
    post: {
      operationId: 'resume',
      summary: 'Approve or reject paused tool calls',
      description: 'Decides the tool calls a paused request waits on, then continues it.',
      tags,
      parameters: [reqParam],
      requestBody: resumeBody,
      responses: { '200': json(ref('ResumeResponse')) },
    },
  };
  paths[`${p}/tealagents/v1alpha1/resume/{request_id}/sse`] = {
    post: {
      operationId: 'resumeSse',
      summary: 'Resume, streamed',
      description: 'As resume, with the continued request streamed as server-sent events.',
      tags,
      parameters: [reqParam],
      requestBody: resumeBody,
      responses: { '200': sse('events') },
    },
  };
  paths[`${p}/tasks/{task_id}`] = {
    get: {
      operationId: 'getTask',
      summary: 'The task with its requests',
      description:
        "One of the caller's tasks: its requests, messages, tool calls and pending approvals, and per request what the model received of the history.",
      tags,
      parameters: [taskParam],
      responses: { '200': json(ref('Task')) },
    },
  };
  paths[`${p}/tasks/{task_id}/cancel`] = {
    post: {
      operationId: 'cancelTask',
      summary: 'Cancel the running or paused request',
      description: 'Ends the running request of the task, or the paused one, as Canceled.',
      tags,
      parameters: [taskParam],
      responses: { '200': json(ref('StateResponse')) },
    },
  };
  addEditPaths(paths, p, tags, taskParam);
  paths[`${p}/sessions/{session_id}`] = {
    get: {
      operationId: 'getSession',
      summary: "The caller's tasks in a session (paged)",
      description: "The caller's tasks in one session, oldest first, a page at a time.",
      tags,
      parameters: [
        { name: 'session_id', in: 'path', required: true, schema: ref('ClientId') },
        { name: 'limit', in: 'query', schema: { type: 'integer' } },
        { name: 'cursor', in: 'query', schema: { type: 'string' } },
      ],
      responses: { '200': json({ type: 'object' }) },
    },
  };
  addDeleteAndListPaths(paths, p, tags, taskParam);
  addTaskStreamPaths(paths, p, tags, taskParam);
  addArchivePaths(paths, p, tags, taskParam);
  addAgUiPaths(paths, p, tags);
}
