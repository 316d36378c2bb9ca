import { PendingApprovals, RequestRecord, StoredMessage } from '../state/state.entities';
import { requestRecord, taskRecord } from '../tasks/lifecycle/lifecycle.fixtures';
import { eventsOfRequest, eventsOfTask, taskDeletedEvent } from './archive-events';
import { plansOf } from './plans';

const MAX = 64 * 1024;
const T0 = Date.parse('2026-11-28T10:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const task = taskRecord({ agent: 'Planner:0.1', createdAt: at(0), requestCount: 1 });
const user = { id: 'm1', role: 'user' as const, items: [{ content_type: 'text' as const, content: 'deploy it' }], created_at: at(0) };

const pause = (id: string, ms: number, calls = ['c1', 'c2']): PendingApprovals => ({
  pauseId: id,
  calls: calls.map((c, i) => ({ id: c, name: `tool_${c}`, arguments: `{"n":${i}}`, risk: i ? 'write_high_risk' : 'read_only' })),
  pending: calls,
  plan: true,
  requestedAt: at(ms),
});

/** A request through its life: paused on a plan, approved, both calls run, completed. */
function stages(): RequestRecord[] {
  const accepted = requestRecord(0, 'Running', { messages: [user], createdAt: at(0), updatedAt: at(0) });
  const modelCall = (ms: number) => ({
    model: 'gpt-4o',
    started_at: at(ms),
    duration_ms: 40,
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
  const asked: StoredMessage = {
    id: 'm2',
    role: 'assistant',
    content: null,
    tool_calls: pause('p1', 50).calls.map(({ id, name, arguments: a }) => ({ id, name, arguments: a })),
    created_at: at(50),
  };
  const answer = (id: string, content: string): StoredMessage => ({ id: `r-${id}`, role: 'tool', tool_call_id: id, content, created_at: at(260) });
  const paused: RequestRecord = {
    ...accepted,
    status: 'Paused',
    messages: [user, asked],
    modelCalls: [modelCall(10)],
    pendingApprovals: pause('p1', 50),
    pauses: [pause('p1', 50)],
    updatedAt: at(50),
  };
  const decided: RequestRecord = {
    ...paused,
    status: 'Running',
    pendingApprovals: undefined,
    approvals: [{ pauseId: 'p1', action: 'approve', approved: ['c1', 'c2'], rejected: [], decidedBy: 'o', decidedAt: at(100) }],
  };
  const done: RequestRecord = {
    ...decided,
    status: 'Completed',
    output: 'deployed',
    messages: [user, asked, answer('c1', 'read'), answer('c2', 'boom'), { id: 'm5', role: 'assistant', content: 'deployed', created_at: at(400) }],
    modelCalls: [modelCall(10), modelCall(300)],
    toolCalls: [
      { id: 'c1', name: 'tool_c1', arguments: '{"n":0}', started_at: at(110), duration_ms: 20, outcome: 'ok', result: 'read' },
      { id: 'c2', name: 'tool_c2', arguments: '{"n":1}', started_at: at(110), duration_ms: 150, outcome: 'error', result: 'boom' },
    ],
    updatedAt: at(400),
  };
  return [accepted, paused, decided, done];
}

const timeline = (events: ReturnType<typeof eventsOfRequest>) =>
  [...events].sort((a, b) => a.seq - b.seq || a.ord - b.ord || a.eventId.localeCompare(b.eventId));

describe('archive events, derived from the stored records', () => {
  it('a request paused on a plan, approved, run and completed: every event once, in order', () => {
    const events = timeline(eventsOfRequest(task, stages()[3]!, MAX));
    expect(events.map((e) => e.type)).toEqual([
      'request_accepted',
      'model_call',
      'plan_proposed',
      'decision',
      'tool_call_started',
      'tool_call_started',
      'tool_call_completed',
      'tool_call_failed',
      'model_call',
      'request_completed',
    ]);
    expect(new Set(events.map((e) => e.eventId)).size).toBe(events.length);
    expect(events[0]).toMatchObject({ tenantId: 'ten', ownerId: 'o', taskId: 't', requestId: 'r0', agentName: 'Planner', agentVersion: '0.1', seq: 0 });
    expect(events[0]!.payload).toEqual({ items: [{ content_type: 'text', content: 'deploy it' }] });
    expect(events[2]!.payload).toMatchObject({ pause_id: 'p1', plan: true, max_risk: 'write_high_risk' });
    expect(events[3]!.payload).toMatchObject({ action: 'approve', approved: ['c1', 'c2'], decided_by: 'o' });
    expect(events[7]!.payload).toMatchObject({ tool_call_id: 'c2', outcome: 'error', result: 'boom', duration_ms: 150 });
  });

  it('orders by causal place, whatever the clocks stamped: sub-millisecond tools, and a store clock behind the process clock', () => {
    const done = stages()[3]!;
    const fast: RequestRecord = {
      ...done,
      // The next model call stamped in the tools' millisecond (0.6 ms tools, rounded up to 1 ms past it).
      modelCalls: [done.modelCalls![0]!, { ...done.modelCalls![1]!, started_at: at(110) }],
      toolCalls: done.toolCalls.map((t) => ({ ...t, duration_ms: 1 })),
      // Pauses and decisions go by the store's clock, which another replica estimated 2 s behind.
      pauses: [{ ...pause('p1', 50), requestedAt: at(-2000) }],
      approvals: [{ ...done.approvals![0]!, decidedAt: at(-1990) }],
      updatedAt: at(-1500),
    };
    expect(timeline(eventsOfRequest(task, fast, MAX)).map((e) => e.type)).toEqual([
      ...['request_accepted', 'model_call', 'plan_proposed', 'decision'],
      ...['tool_call_started', 'tool_call_started', 'tool_call_completed', 'tool_call_failed', 'model_call', 'request_completed'],
    ]);
  });

  it('is stable as the record grows: what an earlier commit derived is derived again identically', () => {
    const [a, b, c, d] = stages().map((r) => eventsOfRequest(task, r, MAX));
    const byId = new Map(d!.map((e) => [e.eventId, e]));
    for (const earlier of [a!, b!, c!]) for (const e of earlier) expect(byId.get(e.eventId)).toEqual(e);
  });

  it('cuts long texts at the limit and marks the cut', () => {
    const long = 'é'.repeat(100); // 200 bytes
    const r = requestRecord(0, 'Completed', {
      messages: [{ ...user, items: [{ content_type: 'text', content: long }] }],
      output: long,
      createdAt: at(0),
      updatedAt: at(1),
    });
    const [accepted, completed] = eventsOfRequest(task, r, 51);
    expect(accepted!.payload.items).toEqual([{ content_type: 'text', content: 'é'.repeat(25), content_truncated: true, content_bytes: 200 }]);
    expect(completed!.payload).toMatchObject({ output: 'é'.repeat(25), output_truncated: true, output_bytes: 200 });
  });

  it("a completed call's extra_data items on tool_call_completed, each value cut as results are; none without items", () => {
    const done = stages()[3]!;
    const long = 'é'.repeat(100); // 200 bytes
    const r: RequestRecord = {
      ...done,
      toolCalls: [
        {
          ...done.toolCalls[0]!,
          extra_data: [
            { key: 'k', value: 'v' },
            { key: 'long', value: long },
          ],
        },
        done.toolCalls[1]!,
      ],
    };
    const events = eventsOfRequest(task, r, 51);
    const completed = events.find((e) => e.type === 'tool_call_completed')!;
    const failed = events.find((e) => e.type === 'tool_call_failed')!;
    expect(completed.payload.extra_data).toEqual([
      { key: 'k', value: 'v' },
      { key: 'long', value: 'é'.repeat(25), value_truncated: true, value_bytes: 200 },
    ]);
    expect(failed.payload).not.toHaveProperty('extra_data');
  });

  it('a fork: one fork event for the copied requests, then the new task own requests', () => {
    const forked = taskRecord({ taskId: 'f', createdAt: at(1000), requestCount: 2, metadata: { forked_from_task_id: 't', forked_from_request_id: 'r0' } });
    const copy = requestRecord(0, 'Completed', { requestId: 'x0', taskId: 'f', messages: [user], createdAt: at(0), updatedAt: at(5) });
    const own = requestRecord(1, 'Completed', { requestId: 'x1', taskId: 'f', messages: [user], createdAt: at(2000), updatedAt: at(2100) });
    const events = eventsOfTask(forked, [copy, own], MAX);
    expect(events.map((e) => [e.type, e.requestId])).toEqual([
      ['fork', undefined],
      ['request_accepted', 'x1'],
      ['request_completed', 'x1'],
    ]);
    expect(events[0]!.payload).toEqual({ from_task_id: 't', from_request_id: 'r0', requests: 1 });
  });

  it('a deleted task: a task-level event that sorts after every request', () => {
    const e = taskDeletedEvent({ ...task, requestCount: 3 }, at(5000), 'o');
    expect(e).toMatchObject({ type: 'task_deleted', seq: 3, eventId: `ten/t@${at(0)}/task_deleted` });
  });
});

describe('plans folded from the events', () => {
  const fold = (records: RequestRecord[]) => plansOf(timeline(records.flatMap((r) => eventsOfRequest(task, r, MAX))));

  it('proposed, then approved, executing and completed with its timings', () => {
    const [, paused, decided, done] = stages();
    expect(fold([paused!])[0]).toMatchObject({ plan_id: 'p1', status: 'proposed', max_risk: 'write_high_risk', approved_at: null });
    expect(fold([decided!])[0]).toMatchObject({ status: 'approved', approved_at: at(100), decided_by: 'o' });
    expect(fold([done!])[0]).toMatchObject({ status: 'completed', executed_at: at(110), completed_at: at(260), duration_ms: 150 });
  });

  it('rejected, and expired', () => {
    const paused = stages()[1]!;
    const rejected: RequestRecord = {
      ...paused,
      status: 'Canceled',
      reason: 'rejected',
      approvals: [{ pauseId: 'p1', action: 'reject', approved: [], rejected: ['c1', 'c2'], decidedBy: 'o', decidedAt: at(90), reason: 'too risky' }],
      updatedAt: at(90),
    };
    expect(fold([rejected])[0]).toMatchObject({ status: 'rejected', reason: 'too risky', completed_at: at(90) });
    const expired: RequestRecord = { ...paused, status: 'Canceled', reason: 'expired', updatedAt: at(9000) };
    expect(fold([expired])[0]).toMatchObject({ status: 'expired', completed_at: at(9000) });
  });
});
