import { ErrorCode } from '../../common/errors/error-code';
import { apply, NOW, refusal, requestRecord, taskRecord, timing } from './lifecycle.fixtures';
import { refine } from './refine';

describe('refine (on_paused: refine)', () => {
  const pause = {
    pauseId: 'p1',
    calls: [
      { id: 'c1', name: 'Notes-wipe', arguments: '{}', risk: 'write_high_risk' },
      { id: 'c2', name: 'Notes-read', arguments: '{}', risk: 'read_only' },
    ],
    pending: ['c1'],
    plan: false,
    requestedAt: 'x',
  };
  const assistant = {
    id: 'a',
    role: 'assistant' as const,
    content: null,
    tool_calls: pause.calls.map(({ id, name, arguments: a }) => ({ id, name, arguments: a })),
    created_at: 'x',
  };
  const paused = () => ({
    task: taskRecord({ status: 'Paused', pauseExpiresAt: NOW + 1000 }),
    requests: [requestRecord(0, 'Paused', { messages: [assistant], pendingApprovals: pause, pauses: [pause] })],
  });
  let n = 0;
  const input = { items: [{ content_type: 'text' as const, content: 'only read' }], text: 'only read', refinedBy: 'o', mint: () => `m${n++}`, timing };

  it('answers every call of the waiting turn as refused, adds the message after them, records the refinement, and runs on under the lease', () => {
    const c = apply(refine(input), paused());
    const r = c.result.request;
    expect(r.status).toBe('Running');
    expect(r.pendingApprovals).toBeUndefined();
    expect(r.pauses).toEqual([pause]);
    expect(r.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(r.messages[1]).toMatchObject({ tool_call_id: 'c1', is_error: true, content: expect.stringContaining('refined the plan: "only read"') });
    expect(r.toolCalls.map((t) => [t.id, t.outcome])).toEqual([
      ['c1', 'rejected'],
      ['c2', 'canceled'],
    ]);
    expect(c.result.decision).toMatchObject({ pauseId: 'p1', action: 'refine', approved: [], rejected: ['c1'], decidedBy: 'o', reason: 'only read' });
    expect(c.task).toMatchObject({ status: 'Running', lease: { requestId: 'r0' } });
    expect(c.task.pauseExpiresAt).toBeUndefined();
  });

  it('is refused (409 TASK_PAUSED) when nothing waits, and (422) for another session', () => {
    expect(refusal(() => refine(input).apply({ task: taskRecord(), requests: [requestRecord(0, 'Completed')] }, NOW))).toBe(ErrorCode.TASK_PAUSED);
    expect(refusal(() => refine({ ...input, sessionId: 'other' }).apply(paused(), NOW))).toBe(ErrorCode.VALIDATION_FAILED);
  });
});
