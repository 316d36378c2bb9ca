import { PendingApprovals, WebhookDelivery } from '../../state/state.entities';
import { NOW, requestRecord, taskRecord } from '../lifecycle/lifecycle.fixtures';
import { webhookPayload } from './webhook-payload';

const agent = { prefix: '/Hooked/1', source: 'Hooked:1' };
const task = taskRecord({ taskId: 't1', tenantId: 'ten' });
const usage = { completion_tokens: 3, prompt_tokens: 5, total_tokens: 8 };
const ids = { tenant_id: 'ten', task_id: 't1', session_id: 's', request_id: 'r0', agent: 'Hooked:1' };

function delivery(event: string, pauseId?: string): WebhookDelivery {
  return {
    id: 'msg_x',
    event,
    requestId: 'r0',
    ...(pauseId ? { pauseId } : {}),
    url: 'https://a.example.com/hook',
    secretEnv: 'S',
    createdAt: NOW,
    attempts: 0,
    dueAt: NOW,
  };
}

const pause = (pauseId: string, over: Partial<PendingApprovals> = {}): PendingApprovals => ({
  pauseId,
  calls: [
    { id: 'c1', name: 'Notes-wipe', arguments: '{"id":"a"}', risk: 'write_high_risk', approvalReason: 'autonomy_level' },
    { id: 'c2', name: 'read', arguments: '{}', risk: 'read_only' },
  ],
  pending: ['c1'],
  plan: false,
  requestedAt: 'x',
  autonomyLevel: 'L1',
  expiresAt: '2027-01-15T08:00:00.000Z',
  ...over,
});

/** The pending call c1 as `tool_calls` shows it (Semantic Kernel's dump, with its risk and why). */
const c1 = {
  inner_content: null,
  ai_model_id: null,
  metadata: {},
  content_type: 'function_call',
  id: 'c1',
  index: 0,
  name: 'Notes-wipe',
  function_name: 'wipe',
  plugin_name: 'Notes',
  arguments: '{"id":"a"}',
  risk: 'write_high_risk',
  approval_reason: 'autonomy_level',
};

describe('webhookPayload', () => {
  it('sends request.completed with the output and token usage, stamped when the event happened', () => {
    const request = requestRecord(0, 'Completed', { output: 'done', tokenUsage: usage });
    expect(webhookPayload(agent, task, request, delivery('request.completed'))).toEqual({
      type: 'request.completed',
      timestamp: new Date(NOW).toISOString(),
      data: { ...ids, status: 'Completed', output: 'done', token_usage: usage },
    });
    expect(webhookPayload(agent, task, requestRecord(0, 'Completed'), delivery('request.completed')).data.output).toBe('');
  });

  it('sends request.failed with the error and the reason', () => {
    const error = { code: 'ABANDONED', message: 'The process running this request stopped' };
    const request = requestRecord(0, 'Failed', { error, reason: 'abandoned' });
    expect(webhookPayload(agent, task, request, delivery('request.failed')).data).toEqual({ ...ids, status: 'Failed', error, reason: 'abandoned' });
    expect(webhookPayload(agent, task, requestRecord(0, 'Failed'), delivery('request.failed')).data).toMatchObject({ error: null, reason: 'failed' });
  });

  it('sends request.canceled with the reason', () => {
    const request = requestRecord(0, 'Canceled', { reason: 'superseded' });
    expect(webhookPayload(agent, task, request, delivery('request.canceled')).data).toEqual({ ...ids, status: 'Canceled', reason: 'superseded' });
    expect(webhookPayload(agent, task, requestRecord(0, 'Canceled'), delivery('request.canceled')).data.reason).toBe('canceled');
  });

  it('sends approval.required with the pending calls, their risk, and where to decide them', () => {
    const request = requestRecord(0, 'Paused', { pendingApprovals: pause('p1'), pauses: [pause('p1')] });
    expect(webhookPayload(agent, task, request, delivery('approval.required', 'p1'))).toEqual({
      type: 'approval.required',
      timestamp: new Date(NOW).toISOString(),
      data: {
        ...ids,
        status: 'Paused',
        pause_id: 'p1',
        plan: false,
        tool_calls: [c1],
        max_risk: 'write_high_risk',
        autonomy_level: 'L1',
        expires_at: '2027-01-15T08:00:00.000Z',
        approval_url: '/Hooked/1/tealagents/v1alpha1/resume/r0?action=approve&pause_id=p1',
        rejection_url: '/Hooked/1/tealagents/v1alpha1/resume/r0?action=reject&pause_id=p1',
      },
    });
  });

  it('sends approval.expired with the pause it expired, and no URL to decide it', () => {
    const request = requestRecord(0, 'Canceled', { reason: 'expired', pauses: [pause('p1', { autonomyLevel: undefined, expiresAt: undefined, plan: true })] });
    expect(webhookPayload(agent, task, request, delivery('approval.expired', 'p1')).data).toEqual({
      ...ids,
      status: 'Canceled',
      pause_id: 'p1',
      plan: true,
      tool_calls: [c1],
      max_risk: 'write_high_risk',
      autonomy_level: null,
      expires_at: null,
    });
  });

  it('finds the pause an approval event is about among the later ones, and is the same on every attempt', () => {
    const later = pause('p2', { calls: [{ id: 'c9', name: 'other', arguments: '{}' }], pending: ['c9'] });
    const request = requestRecord(0, 'Paused', { pendingApprovals: later, pauses: [pause('p1'), later] });
    const payload = webhookPayload(agent, task, request, delivery('approval.required', 'p1'));
    expect(payload.data).toMatchObject({
      pause_id: 'p1',
      tool_calls: [c1],
      approval_url: '/Hooked/1/tealagents/v1alpha1/resume/r0?action=approve&pause_id=p1',
    });
    expect(webhookPayload(agent, task, request, delivery('approval.required', 'p1'))).toEqual(payload);
    const current = webhookPayload(agent, task, request, delivery('approval.required', 'p2')).data;
    expect(current).toMatchObject({ pause_id: 'p2', max_risk: null, tool_calls: [expect.objectContaining({ id: 'c9', risk: null, approval_reason: null })] });
  });

  it('names only the pause id of a pause it cannot find', () => {
    const request = requestRecord(0, 'Canceled', { reason: 'expired' });
    expect(webhookPayload(agent, task, request, delivery('approval.expired', 'p9')).data).toEqual({ ...ids, status: 'Canceled', pause_id: 'p9' });
    expect(webhookPayload(agent, task, request, delivery('approval.expired')).data).toEqual({ ...ids, status: 'Canceled', pause_id: null });
  });
});
