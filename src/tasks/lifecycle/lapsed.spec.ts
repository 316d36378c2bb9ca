import { recoverLapsed } from './admit';
import { asRead } from './lapsed';
import { apply, NOW, requestRecord as req, taskRecord as task, timing } from './lifecycle.fixtures';

const lease = (requestId: string, expiresAt: number) => ({ lease: { requestId, expiresAt } });

describe('asRead: a lapsed holder as a read shows it', () => {
  it('shows a dead holder Failed, abandoned, as recoverLapsed stores it, and the task Failed', () => {
    const state = { task: task({ status: 'Running', requestCount: 2, ...lease('r1', NOW - 1) }), requests: [req(0, 'Completed'), req(1, 'Running')] };
    const seen = asRead(state, NOW);
    const stored = apply(recoverLapsed(timing), state);
    expect(seen.task.status).toBe('Failed');
    expect(seen.requests.map((r) => [r.status, r.reason])).toEqual([
      ['Completed', undefined],
      ['Failed', 'abandoned'],
    ]);
    expect(seen.requests[1]).toEqual(stored.requests[0]);
    expect(stored.task.status).toBe('Failed');
  });

  it('keeps the task Running, the follow-on waiting, when one waits behind the dead holder', () => {
    const state = {
      task: task({ status: 'Running', requestCount: 2, queued: 'r1', ...lease('r0', NOW - 1) }),
      requests: [req(0, 'Running'), req(1, 'Queued')],
    };
    const seen = asRead(state, NOW);
    expect(seen.task.status).toBe('Running');
    expect(seen.requests.map((r) => [r.status, r.reason])).toEqual([
      ['Failed', 'abandoned'],
      ['Queued', undefined],
    ]);
  });

  it('leaves a live lease, a paused task and a task with no holder as they are', () => {
    const live = { task: task({ status: 'Running', ...lease('r0', NOW + 1) }), requests: [req(0, 'Running')] };
    const done = { task: task({ status: 'Completed' }), requests: [req(0, 'Completed')] };
    const paused = { task: task({ status: 'Paused' }), requests: [req(0, 'Paused')] };
    for (const state of [live, done, paused]) expect(asRead(state, NOW)).toBe(state);
  });
});

describe('recoverLapsed with a lapsed lease whose holder is not running', () => {
  it('drops the lease (the lease index then lets go of the task), and leaves everything else', () => {
    const c = apply(recoverLapsed(timing), { task: task({ status: 'Completed', ...lease('r0', NOW - 1) }), requests: [req(0, 'Completed')] });
    expect(c.result).toEqual({ kind: 'closed' });
    expect(c.task.lease).toBeUndefined();
    expect(c.task.status).toBe('Completed');
    expect(c.requests).toEqual([]);
  });
});
