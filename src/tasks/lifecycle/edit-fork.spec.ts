import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { appendForked, fork } from './fork';
import { edit, supersededBy, withoutSuperseded } from './edit';
import { leaseActive } from './lease';
import { apply, NOW, refusal, requestRecord, taskRecord, timing } from './lifecycle.fixtures';

const task = (over: Partial<TaskRecord> = {}) => taskRecord({ requestCount: 3, ...over });
/** A request with its user message `q{seq}`. */
const req = (seq: number, status: RequestRecord['status'] = 'Completed', over: Partial<RequestRecord> = {}) =>
  requestRecord(seq, status, { messages: [{ id: `m${seq}`, role: 'user', items: [{ content_type: 'text', content: `q${seq}` }], created_at: 'c' }], ...over });

const three = () => [req(0), req(1), req(2)];
const newRequest = (over: Partial<RequestRecord> = {}) => req(-1, 'Running', { requestId: 'new', ...over });

describe('edit', () => {
  const editOf = (requestId: string, over: Partial<RequestRecord> = {}) => edit({ requestId, request: newRequest(over), timing });

  it.each([0, 1, 2])('of request %i: a new request at the end runs, holding the lease; the edited one and later are superseded', (seq) => {
    const state = { task: task(), requests: three() };
    const out = apply(editOf(`r${seq}`), state);
    expect(out.result.request).toMatchObject({ requestId: 'new', seq: 3, status: 'Running', edits: { requestId: `r${seq}`, seq } });
    expect(out.task).toMatchObject({ status: 'Running', requestCount: 4, lease: { requestId: 'new' } });
    expect(out.requests).toEqual([out.result.request]); // the superseded records are not rewritten
    const all = [...state.requests, out.result.request];
    expect([...supersededBy(all).entries()]).toEqual(state.requests.filter((r) => r.seq >= seq).map((r) => [r.requestId, 'new']));
    expect(withoutSuperseded(out.result.earlier, out.result.request).map((r) => r.requestId)).toEqual(
      state.requests.filter((r) => r.seq < seq).map((r) => r.requestId),
    );
  });

  it('keeps the edited turn’s user context unless the edit gives one', () => {
    const state = { task: task(), requests: [req(0, 'Completed', { userContext: { a: '1' } }), req(1), req(2)] };
    expect(apply(editOf('r0'), state).result.request.userContext).toEqual({ a: '1' });
    expect(apply(editOf('r0', { userContext: { b: '2' } }), state).result.request.userContext).toEqual({ b: '2' });
  });

  it('of a failed or canceled request is allowed', () => {
    const state = { task: task({ status: 'Failed' }), requests: [req(0), req(1, 'Failed', { reason: 'failed' })] };
    expect(apply(editOf('r1'), { ...state, task: task({ status: 'Failed', requestCount: 2 }) }).result.request.seq).toBe(2);
  });

  it('is refused while a request runs (TASK_BUSY)', () => {
    const state = {
      task: task({ status: 'Running', requestCount: 4, lease: { requestId: 'r3', expiresAt: NOW + 500 } }),
      requests: [...three(), req(3, 'Running')],
    };
    expect(refusal(() => editOf('r1').apply(state, NOW))).toBe(ErrorCode.TASK_BUSY);
  });

  it('is refused while the task is paused (TASK_PAUSED)', () => {
    const state = { task: task({ status: 'Paused' }), requests: [req(0), req(1), req(2, 'Paused')] };
    expect(refusal(() => editOf('r2').apply(state, NOW))).toBe(ErrorCode.TASK_PAUSED);
    expect(refusal(() => editOf('r0').apply(state, NOW))).toBe(ErrorCode.TASK_PAUSED);
  });

  it('of an unknown request is REQUEST_NOT_FOUND', () => {
    expect(refusal(() => editOf('nope').apply({ task: task(), requests: three() }, NOW))).toBe(ErrorCode.REQUEST_NOT_FOUND);
  });

  it('of a superseded request is refused (REQUEST_SUPERSEDED); its replacement can be edited', () => {
    const requests = [...three(), req(3, 'Completed', { requestId: 'e', edits: { requestId: 'r1', seq: 1 } })];
    const state = { task: task({ requestCount: 4 }), requests };
    expect(refusal(() => editOf('r2').apply(state, NOW))).toBe(ErrorCode.REQUEST_SUPERSEDED);
    const out = apply(editOf('e'), state);
    const marks = supersededBy([...requests, out.result.request]);
    expect(Object.fromEntries(marks)).toEqual({ r1: 'e', r2: 'e', e: 'new' });
    expect(withoutSuperseded(out.result.earlier, out.result.request).map((r) => r.requestId)).toEqual(['r0']);
  });

  it('after a lapsed lease closes the dead request as abandoned and cancels the waiting follow-on as superseded', () => {
    const state = {
      task: task({ status: 'Running', requestCount: 5, lease: { requestId: 'r3', expiresAt: NOW - 1 }, queued: 'r4' }),
      requests: [...three(), req(3, 'Running'), req(4, 'Queued')],
    };
    const out = apply(editOf('r1'), state);
    expect(out.requests.map((r) => [r.requestId, r.status, r.reason])).toEqual([
      ['r3', 'Failed', 'abandoned'],
      ['r4', 'Canceled', 'superseded'],
      ['new', 'Running', undefined],
    ]);
    expect(out.task.queued).toBeUndefined();
    expect(leaseActive(out.task, NOW)).toBe(true);
  });
});

describe('fork', () => {
  let n = 0;
  const input = (over: Partial<Parameters<typeof fork>[1]> = {}) => ({ taskId: 'f', mint: () => `id${n++}`, timing, ...over });

  it('by default copies every completed request the model sees, with new ids, into a new Completed task', () => {
    const state = { task: task({ requestCount: 4, metadata: { k: 'v' } }), requests: [req(0), req(1, 'Failed'), req(2), req(3, 'Canceled')] };
    const out = fork(state, input(), NOW);
    expect(out.task).toMatchObject({ taskId: 'f', sessionId: 's', ownerId: 'o', agent: 'A:1', status: 'Completed', version: 0, requestCount: 2 });
    expect(out.task.lease).toBeUndefined();
    expect(out.task.metadata).toEqual({ k: 'v', forked_from_task_id: 't', forked_from_request_id: 'r2' });
    expect(out.requests.map((r) => [r.seq, r.taskId, r.messages[0]])).toEqual([
      [0, 'f', expect.objectContaining({ items: [{ content_type: 'text', content: 'q0' }] })],
      [1, 'f', expect.objectContaining({ items: [{ content_type: 'text', content: 'q2' }] })],
    ]);
    expect(out.requests.map((r) => r.requestId)).not.toContain('r0');
    expect(out.requests[0]!.messages[0]!.id).not.toBe('m0');
    expect(state.requests[0]!.taskId).toBe('t'); // the source is untouched
  });

  it('up to a request holds the history as that request saw it, superseded ones included', () => {
    const requests = [...three(), req(3, 'Completed', { requestId: 'e', edits: { requestId: 'r1', seq: 1 } })];
    const state = { task: task({ requestCount: 4 }), requests };
    expect(fork(state, input(), NOW).requests.map((r) => (r.messages[0] as { items: unknown }).items)).toEqual([
      [{ content_type: 'text', content: 'q0' }],
      [{ content_type: 'text', content: 'q3' }],
    ]);
    const old = fork(state, input({ requestId: 'r2', sessionId: 'other' }), NOW);
    expect(old.requests.map((r) => [r.seq, r.sessionId, r.edits])).toEqual([
      [0, 'other', undefined],
      [1, 'other', undefined],
      [2, 'other', undefined],
    ]);
    expect(old.task).toMatchObject({ sessionId: 'other', requestCount: 3, metadata: { forked_from_request_id: 'r2' } });
  });

  it('works while the source runs (it copies only completed requests)', () => {
    const state = {
      task: task({ status: 'Running', requestCount: 4, lease: { requestId: 'r3', expiresAt: NOW + 500 } }),
      requests: [...three(), req(3, 'Running')],
    };
    expect(fork(state, input(), NOW).requests).toHaveLength(3);
  });

  it('refuses a request that did not complete (422 request_id), an unknown one (404), and a task with nothing completed (422)', () => {
    const state = { task: task({ status: 'Paused' }), requests: [req(0, 'Failed'), req(1, 'Paused')] };
    expect(refusal(() => fork(state, input({ requestId: 'r1' }), NOW))).toBe(ErrorCode.VALIDATION_FAILED);
    expect(refusal(() => fork(state, input({ requestId: 'nope' }), NOW))).toBe(ErrorCode.REQUEST_NOT_FOUND);
    expect(refusal(() => fork(state, input(), NOW))).toBe(ErrorCode.VALIDATION_FAILED);
  });

  it('appendForked grows the copy batch by batch, idempotently', () => {
    const batch = [req(2), req(3)];
    const out = apply(appendForked(batch, timing), { task: task({ requestCount: 2 }), requests: [] });
    expect(out.task.requestCount).toBe(4);
    expect(apply(appendForked(batch, timing), { task: out.task, requests: [] }).task.requestCount).toBe(4);
  });
});
