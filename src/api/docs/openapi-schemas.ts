/** JSON schemas of the public payloads (API.md §3), shared by every agent's openapi.json. */

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

export const OPENAPI_SCHEMAS: Record<string, unknown> = {
  MultiModalItem: {
    type: 'object',
    required: ['content'],
    properties: {
      content_type: { type: 'string', enum: ['text', 'image'], default: 'text' },
      content: { type: 'string', description: 'Text, or for an image a data:image/...;base64, URI' },
    },
  },
  HistoryMessage: {
    type: 'object',
    required: ['role'],
    properties: {
      role: { type: 'string', enum: ['user', 'assistant'] },
      items: { type: 'array', items: ref('MultiModalItem') },
      content: { type: 'string', description: 'Older shape: read as one text item when items is absent' },
    },
  },
  BaseMultiModalInput: {
    type: 'object',
    properties: {
      session_id: { type: 'string', nullable: true },
      chat_history: { type: 'array', items: ref('HistoryMessage'), nullable: true },
      user_context: { type: 'object', additionalProperties: { type: 'string' }, nullable: true },
    },
  },
  TokenUsage: {
    type: 'object',
    properties: {
      completion_tokens: { type: 'integer' },
      prompt_tokens: { type: 'integer' },
      total_tokens: { type: 'integer' },
    },
  },
  ExtraData: {
    type: 'object',
    properties: {
      items: {
        type: 'array',
        items: { type: 'object', properties: { key: { type: 'string' }, value: { type: 'string' } } },
      },
    },
  },
  InvokeResponse: {
    type: 'object',
    properties: {
      session_id: { type: 'string', nullable: true },
      source: { type: 'string', example: 'Name:0.1' },
      request_id: { type: 'string' },
      token_usage: ref('TokenUsage'),
      extra_data: { ...ref('ExtraData'), nullable: true },
      output_raw: { type: 'string', nullable: true },
      output_pydantic: { nullable: true },
    },
  },
  UserMessage: {
    type: 'object',
    required: ['items'],
    properties: {
      session_id: ref('ClientId'),
      task_id: ref('ClientId'),
      items: { type: 'array', minItems: 1, items: ref('MultiModalItem') },
      user_context: { type: 'object', additionalProperties: { type: 'string' } },
      webhook_url: {
        type: 'string',
        format: 'uri',
        description: "Where this request's events are POSTed (docs/webhooks.md): only under the agent's spec.webhooks[].allow_request_urls, else 422",
      },
    },
  },
  /** A session or task id the caller names (src/api/v3/client-id.ts); a task_id that does not exist creates that task. */
  ClientId: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$', maxLength: 128 },
  ResumeResponse: {
    type: 'object',
    description:
      "Upstream's resume body: the TealAgentsResponse (status Completed), a HitlResponse (status Paused) or a RejectedToolResponse (status Canceled), each with `status`",
    required: ['task_id', 'session_id', 'request_id', 'status'],
    properties: {
      task_id: { type: 'string' },
      session_id: { type: 'string' },
      request_id: { type: 'string' },
      status: { type: 'string', enum: ['Completed', 'Paused', 'Canceled'] },
    },
  },
  StateResponse: {
    type: 'object',
    properties: {
      session_id: { type: 'string' },
      task_id: { type: 'string' },
      request_id: { type: 'string' },
      status: { type: 'string', enum: ['Completed', 'Paused', 'Failed', 'Canceled'] },
      content: { type: 'object' },
    },
  },
  ResumeRequest: {
    type: 'object',
    required: ['action'],
    properties: {
      action: { type: 'string', enum: ['approve', 'reject'] },
      decisions: {
        type: 'array',
        items: {
          type: 'object',
          required: ['tool_call_id', 'approved'],
          properties: { tool_call_id: { type: 'string' }, approved: { type: 'boolean' } },
        },
      },
    },
  },
  /** `GET /tasks/{task_id}` (src/tasks/views/task-view.ts); more fields may be present. */
  Task: {
    type: 'object',
    properties: {
      task_id: { type: 'string' },
      session_id: { type: 'string' },
      agent: { type: 'string', example: 'Name:0.1' },
      status: { type: 'string', enum: ['Running', 'Paused', 'Completed', 'Failed', 'Canceled'] },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
      expires_at: { type: 'string', format: 'date-time', nullable: true },
      version: { type: 'integer' },
      metadata: { type: 'object', additionalProperties: { type: 'string' } },
      running_request_id: { type: 'string', nullable: true },
      requests: { type: 'array', items: ref('TaskRequest') },
      pending_approvals: { type: 'array', items: { type: 'object' } },
    },
  },
  TaskRequest: {
    type: 'object',
    properties: {
      request_id: { type: 'string' },
      seq: { type: 'integer' },
      status: { type: 'string', enum: ['Queued', 'Running', 'Paused', 'Completed', 'Failed', 'Canceled'] },
      created_at: { type: 'string', format: 'date-time' },
      updated_at: { type: 'string', format: 'date-time' },
      user_context: { type: 'object', additionalProperties: { type: 'string' }, nullable: true },
      messages: { type: 'array', items: { type: 'object' } },
      tool_calls: { type: 'array', items: { type: 'object' } },
      token_usage: ref('TokenUsage'),
      output: { type: 'string', nullable: true },
      error: { type: 'object', nullable: true, properties: { code: { type: 'string' }, message: { type: 'string' } } },
      reason: { type: 'string', nullable: true },
      edit_of: { type: 'string', nullable: true, description: 'The request whose user turn this one replaced (POST .../requests/{request_id}/edit)' },
      superseded_by: { type: 'string', nullable: true, description: 'The edit that replaced this request (listed only with ?include=superseded)' },
      model_input_messages: {
        type: 'integer',
        nullable: true,
        description:
          'Messages the model received on the first model call of this request (system prompt and user context included); null on a request that failed or was canceled',
      },
      history_truncated: {
        type: 'boolean',
        description:
          'Earlier turns were left out of the model input: by spec.agent.history, or after the model answered "context length exceeded" (retried once with the older half of the turns left out)',
      },
      history_omitted_messages: { type: 'integer', description: 'How many history messages were left out (whole turns)' },
      history_summarized: { type: 'boolean', description: 'The left-out turns were replaced by a summary (spec.agent.history.strategy: summarize)' },
      approvals: { type: 'array', items: { type: 'object' } },
      webhooks: {
        type: 'array',
        items: ref('RequestWebhook'),
        description:
          "The request's webhook deliveries (docs/webhooks.md), one per event and receiver, oldest first; absent when the task's outbox holds none for it (an agent without webhooks never shows it). Delivered ones are kept the newest 10 per task, dead ones 20",
      },
    },
  },
  /** One entry of a request's `webhooks` (src/tasks/views/delivery-view.ts). */
  RequestWebhook: {
    type: 'object',
    required: ['id', 'event', 'url', 'status', 'attempts'],
    properties: {
      id: { type: 'string', description: 'The `webhook-id` every attempt of this event carries' },
      event: { type: 'string', enum: ['request.completed', 'request.failed', 'request.canceled', 'approval.required', 'approval.expired'] },
      pause_id: { type: 'string', nullable: true, description: 'The pause an approval event is about; null for the others' },
      url: { type: 'string' },
      status: {
        type: 'string',
        enum: ['pending', 'failed', 'delivered'],
        description: 'delivered: a 2xx answered; failed: dead, no more attempts (an admin may redeliver it); pending: waiting for its next attempt or in one',
      },
      attempts: { type: 'integer' },
      last_attempt_at: { type: 'string', format: 'date-time', nullable: true },
      last_status: { type: 'integer', nullable: true, description: "The receiver's HTTP status on the last attempt; null when it did not answer" },
      last_error: { type: 'string', nullable: true },
      next_attempt_at: { type: 'string', format: 'date-time', nullable: true, description: 'When it is tried next (pending only)' },
    },
  },
  ProblemDetails: {
    type: 'object',
    properties: {
      type: { type: 'string' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      instance: { type: 'string' },
      code: { type: 'string' },
      error_id: { type: 'string' },
      errors: {
        type: 'array',
        items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } },
      },
    },
  },
};

export { ref };
