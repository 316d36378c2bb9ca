import { randomUUID } from 'node:crypto';
import { RequestRecord, TaskRecord } from '../../src/state/state.entities';

/** Fixed, distinct times so ordering assertions never depend on the clock. */
export function isoAt(minute: number): string {
  return new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();
}

export function makeTask(tenantId: string, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: `task-${randomUUID()}`,
    sessionId: 'session-1',
    tenantId,
    ownerId: 'owner-1',
    agent: 'chat:0.1',
    status: 'Running',
    version: 0,
    requestCount: 0,
    lastEventSeq: 0,
    metadata: {},
    createdAt: isoAt(0),
    updatedAt: isoAt(0),
    ...overrides,
  };
}

/** A request with every optional field set, so a round trip proves nothing is dropped. */
export function makeRequest(task: TaskRecord, seq: number, overrides: Partial<RequestRecord> = {}): RequestRecord {
  return {
    requestId: `req-${randomUUID()}`,
    taskId: task.taskId,
    sessionId: task.sessionId,
    tenantId: task.tenantId,
    ownerId: task.ownerId,
    seq,
    status: 'Completed',
    messages: [
      { id: `m-${seq}-u`, role: 'user', items: [{ content_type: 'text', content: `question ${seq} ✓ "quoted"` }], created_at: isoAt(seq) },
      {
        id: `m-${seq}-a`,
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `call-${seq}`, name: 'lookup', arguments: '{"q":"x"}' }],
        created_at: isoAt(seq),
      },
      { id: `m-${seq}-t`, role: 'tool', tool_call_id: `call-${seq}`, content: 'result', is_error: false, created_at: isoAt(seq) },
    ],
    userContext: { locale: 'en-GB' },
    toolCalls: [{ id: `call-${seq}`, name: 'lookup', arguments: '{"q":"x"}', started_at: isoAt(seq), duration_ms: 12, outcome: 'ok', result: 'result' }],
    tokenUsage: { completion_tokens: 3, prompt_tokens: 5, total_tokens: 8 },
    output: `answer ${seq}`,
    createdAt: isoAt(seq),
    updatedAt: isoAt(seq),
    ...overrides,
  };
}

/** The task as a store must return it after a commit expecting `expectedVersion`. */
export function storedAs(task: TaskRecord, expectedVersion: number): TaskRecord {
  return { ...task, version: expectedVersion + 1 };
}
