import type { Interrupt } from '@ag-ui/core';

/** A pending call as a paused request's HitlResponse lists it (src/tasks/views/request-response.ts). */
export interface PendingCallView {
  id: string;
  name: string;
  arguments: string;
  risk: string | null;
  approval_reason: string | null;
}

/** The HitlResponse content of a paused request (the `approval-required` event's data). */
export interface PauseView {
  task_id: string;
  request_id: string;
  pause_id: string;
  message: string;
  plan: boolean;
  expires_at: string | null;
  tool_calls: PendingCallView[];
}

/** What a resolved interrupt's `payload` holds (AG-UI `responseSchema`). */
const RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    approved: { type: 'boolean' },
    toolCallId: { type: 'string', description: 'decide this call only (the others of the pause by another entry)' },
    reason: { type: 'string', description: 'why it was rejected (shown to the model)' },
  },
  required: ['approved'],
};

/**
 * The AG-UI interrupts of a pause: one per pending tool call, each with the pause's id (a resume
 * answers the pause; `payload.toolCallId` narrows an answer to one call), why it waits
 * (`requires_hitl`, `autonomy_level`, `plan`) and when it expires.
 */
export function interruptsOf(pause: PauseView): Interrupt[] {
  return pause.tool_calls.map((c) => ({
    id: pause.pause_id,
    reason: c.approval_reason ?? 'requires_hitl',
    message: `Approve ${c.name}(${c.arguments})?`,
    toolCallId: c.id,
    responseSchema: RESPONSE_SCHEMA,
    ...(pause.expires_at ? { expiresAt: pause.expires_at } : {}),
    metadata: { request_id: pause.request_id, tool_name: c.name, arguments: c.arguments, risk: c.risk, plan: pause.plan },
  }));
}

/** `pending_approvals` of the run's STATE_SNAPSHOT (as `GET /tasks/{id}` lists them, in short). */
export function pendingApprovalsOf(pause: PauseView) {
  return [
    {
      request_id: pause.request_id,
      pause_id: pause.pause_id,
      plan: pause.plan,
      expires_at: pause.expires_at,
      tool_calls: pause.tool_calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, risk: c.risk, approval_reason: c.approval_reason })),
    },
  ];
}
