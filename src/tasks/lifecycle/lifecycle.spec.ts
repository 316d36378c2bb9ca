import { ErrorCode } from '../../common/errors/error-code';
import { PendingApprovals, RequestRecord } from '../../state/state.entities';
import { admitFollowOn, admitNew, recoverLapsed } from './admit';
import { cancel, expirePause } from './cancel';
import { decide, ResumeDecision } from './decide';
import { finish, renew } from './finish';
import { leaseActive, stamped, withoutLease } from './lease';
import { apply, NOW, refusal, requestRecord, taskRecord, timing } from './lifecycle.fixtures';

const task = taskRecord;
const req = requestRecord;

const held = (requestId: string, expiresAt = NOW + 500) => ({ lease: { requestId, expiresAt } });
const lapsed = (requestId: string) => held(requestId, NOW - 1);

const newReq = req(99, 'Running', { requestId: 'new' });
const followOn = (onBusy: 'reject' | 'enqueue' = 'reject', sessionId?: string) => admitFollowOn({ request: newReq, onBusy, sessionId, timing });

describe('lease', () => {
  it('is active until it expires', () => {
    expect(leaseActive(task(held('r1')), NOW)).toBe(true);
    expect(leaseActive(task(lapsed('r1')), NOW)).toBe(false);
    expect(leaseActive(task(), NOW)).toBe(false);
  });

  it("is written the store clock's skew allowance longer, so a replica whose estimate runs that much ahead still sees it held", () => {
    const skewed = { leaseMs: 1000, clockSkewMs: 250 };
    const c = admitNew(task({ status: 'Running', requestCount: 0 }), req(0, 'Running'), NOW, skewed);
    expect(c.task.lease).toEqual({ requestId: 'r0', expiresAt: NOW + 1250 });
    expect(leaseActive(c.task, NOW + 1000 + 249)).toBe(true);
    expect(leaseActive(c.task, NOW + 1250)).toBe(false);
  });

  it('is dropped with a pending cancel, the rest of the task kept', () => {
    const before = task({ ...held('r1'), cancelRequested: 'r1', status: 'Running' });
    const after = withoutLease(before, NOW, timing);
    expect(after.lease).toBeUndefined();
    expect('cancelRequested' in after).toBe(false);
    expect({ ...after, updatedAt: before.updatedAt }).toEqual((({ lease: _l, cancelRequested: _c, ...rest }) => rest)(before));
  });

  it('never lets a held task expire before its lease (plus one lease of slack), whatever the TTL', () => {
    const t = stamped(task(held('r1', NOW + 1000)), NOW, { leaseMs: 1000, ttlSeconds: 1 });
    expect(Date.parse(t.expiresAt!)).toBe(NOW + 2000);
    const idle = stamped(task(), NOW, { leaseMs: 1000, ttlSeconds: 60 });
    expect(Date.parse(idle.expiresAt!)).toBe(NOW + 60_000);
    expect(stamped(task(), NOW, timing).expiresAt).toBeUndefined();
  });
});

describe('admit', () => {
  it('a new task: its first request runs holding the lease', () => {
    const c = admitNew(task({ status: 'Running', requestCount: 0 }), req(0, 'Running'), NOW, timing);
    expect(c.task).toMatchObject({ status: 'Running', requestCount: 1, lease: { requestId: 'r0', expiresAt: NOW + 1000 } });
    expect(c.result.earlier).toEqual([]);
  });

  it('a follow-on on an idle task runs at the next seq, with the earlier requests', () => {
    const state = { task: task(), requests: [req(0, 'Completed')] };
    const c = apply(followOn(), state);
    expect(c.result).toMatchObject({ kind: 'run', request: { requestId: 'new', seq: 1, status: 'Running', sessionId: 's' } });
    expect(c.task).toMatchObject({ status: 'Running', requestCount: 2, lease: { requestId: 'new' } });
    expect(c.requests.map((r) => r.requestId)).toEqual(['new']);
  });

  it('refuses a busy task (409 TASK_BUSY), a paused one (409 TASK_PAUSED, as upstream) and another session (422)', () => {
    expect(refusal(() => followOn().apply({ task: task({ status: 'Running', ...held('r0') }), requests: [req(0, 'Running')] }, NOW))).toBe(ErrorCode.TASK_BUSY);
    expect(refusal(() => followOn('enqueue').apply({ task: task({ status: 'Paused' }), requests: [req(0, 'Paused')] }, NOW))).toBe(ErrorCode.TASK_PAUSED);
    expect(refusal(() => followOn('reject', 'other').apply({ task: task(), requests: [] }, NOW))).toBe(ErrorCode.VALIDATION_FAILED);
  });

  it('enqueue on a busy task: waits, superseding the one that waited', () => {
    const state = { task: task({ status: 'Running', requestCount: 2, queued: 'r1', ...held('r0') }), requests: [req(0, 'Running'), req(1, 'Queued')] };
    const c = apply(followOn('enqueue'), state);
    expect(c.result).toMatchObject({ kind: 'queued', request: { requestId: 'new', seq: 2, status: 'Queued' } });
    expect(c.task).toMatchObject({ queued: 'new', requestCount: 3, lease: { requestId: 'r0' } });
    expect(c.requests.find((r) => r.requestId === 'r1')).toMatchObject({ status: 'Canceled', reason: 'superseded' });
  });

  it('a lapsed lease: the dead holder is closed as abandoned in the same write, and the follow-on runs', () => {
    const c = apply(followOn(), { task: task({ status: 'Running', ...lapsed('r0') }), requests: [req(0, 'Running')] });
    expect(c.requests[0]).toMatchObject({ requestId: 'r0', status: 'Failed', reason: 'abandoned', error: { code: 'ABANDONED' } });
    expect(c.result).toMatchObject({ kind: 'run', earlier: [{ requestId: 'r0', status: 'Failed' }] });
  });

  it('enqueue behind a dead holder: the waiting request runs now, the follow-on waits behind it', () => {
    const state = { task: task({ status: 'Running', requestCount: 2, queued: 'r1', ...lapsed('r0') }), requests: [req(0, 'Running'), req(1, 'Queued')] };
    const c = apply(followOn('enqueue'), state);
    expect(c.result).toMatchObject({ kind: 'queued', request: { requestId: 'new', seq: 2 }, takeOver: { request: { requestId: 'r1', status: 'Running' } } });
    expect(c.task).toMatchObject({ queued: 'new', lease: { requestId: 'r1' } });
  });
});

describe('recoverLapsed', () => {
  it('does nothing while the lease holds or the task is paused', () => {
    expect(recoverLapsed(timing).apply({ task: task({ queued: 'r1', ...held('r0') }), requests: [req(0, 'Running'), req(1, 'Queued')] }, NOW)).toEqual({
      unchanged: { kind: 'none' },
    });
    expect(recoverLapsed(timing).apply({ task: task({ status: 'Paused', queued: 'r1' }), requests: [req(0, 'Paused'), req(1, 'Queued')] }, NOW)).toEqual({
      unchanged: { kind: 'none' },
    });
  });

  it('hands the lease of a dead holder to the waiting request', () => {
    const c = apply(recoverLapsed(timing), {
      task: task({ status: 'Running', queued: 'r1', ...lapsed('r0') }),
      requests: [req(0, 'Running'), req(1, 'Queued')],
    });
    expect(c.result).toMatchObject({
      kind: 'run',
      run: { request: { requestId: 'r1', status: 'Running' }, earlier: [{ requestId: 'r0', reason: 'abandoned' }] },
    });
    expect(c.task.queued).toBeUndefined();
    expect(c.task.lease?.requestId).toBe('r1');
  });

  it('closes a dead holder with nobody waiting', () => {
    const c = apply(recoverLapsed(timing), { task: task({ status: 'Running', ...lapsed('r0') }), requests: [req(0, 'Running')] });
    expect(c.result).toEqual({ kind: 'closed' });
    expect(c.task).toMatchObject({ status: 'Failed' });
    expect(c.task.lease).toBeUndefined();
  });
});

describe('renew and finish', () => {
  it('renew extends our lease and reports a cancel asked through the task; another holder is LEASE_LOST', () => {
    const c = apply(renew('r0', timing), { task: task({ ...lapsed('r0'), cancelRequested: 'r0' }), requests: [] });
    expect(c.task.lease).toEqual({ requestId: 'r0', expiresAt: NOW + 1000 });
    expect(c.result).toEqual({ cancelRequested: true });
    expect(refusal(() => renew('r0', timing).apply({ task: task(held('r9')), requests: [] }, NOW))).toBe(ErrorCode.LEASE_LOST);
    expect(refusal(() => renew('r0', timing).apply({ task: task(), requests: [] }, NOW))).toBe(ErrorCode.LEASE_LOST);
  });

  it('finish releases the lease, or hands it to the waiting request', () => {
    const done = req(0, 'Completed');
    const alone = apply(finish(done, timing), { task: task({ status: 'Running', ...held('r0') }), requests: [] });
    expect(alone.task).toMatchObject({ status: 'Completed' });
    expect(alone.task.lease).toBeUndefined();
    const handed = apply(finish(done, timing), { task: task({ status: 'Running', queued: 'r1', ...held('r0') }), requests: [req(1, 'Queued')] });
    expect(handed.result.next).toMatchObject({ requestId: 'r1', status: 'Running' });
    expect(handed.task).toMatchObject({ status: 'Running', lease: { requestId: 'r1' } });
    expect(handed.task.queued).toBeUndefined();
  });

  it('finish on a draining replica releases the lease and leaves the waiting request for the next replica', () => {
    const failed = req(0, 'Failed', { reason: 'shutdown' });
    const state = { task: task({ status: 'Running', queued: 'r1', ...held('r0') }), requests: [req(1, 'Queued')] };
    const c = apply(finish(failed, timing, false), state);
    expect(c.result.next).toBeUndefined();
    expect(c.requests).toEqual([failed]);
    expect(c.task).toMatchObject({ status: 'Failed', queued: 'r1' });
    // In the waiting request's name and lapsed already: the lease index lists the task for the next sweep.
    expect(c.task.lease).toEqual({ requestId: 'r1', expiresAt: NOW });
    expect(leaseActive(c.task, NOW)).toBe(false);
    // Whichever replica looks next runs it at once: the lease is free, not lapsing.
    const next = apply(recoverLapsed(timing), { task: c.task, requests: [failed, req(1, 'Queued')] }, NOW);
    expect(next.result).toMatchObject({ kind: 'run', run: { request: { requestId: 'r1', status: 'Running' } } });
  });

  it('a pause keeps the waiting request waiting and records when the pause expires', () => {
    const paused = req(0, 'Paused', { pendingApprovals: pause({ expiresAt: new Date(NOW + 5000).toISOString() }) });
    const c = apply(finish(paused, timing), { task: task({ status: 'Running', queued: 'r1', ...held('r0') }), requests: [req(1, 'Queued')] });
    expect(c.task).toMatchObject({ status: 'Paused', queued: 'r1', pauseExpiresAt: NOW + 5000 });
    expect(c.task.lease).toBeUndefined();
    expect(c.requests).toHaveLength(1);
  });

  it('a cancel asked through the task (answered 202 elsewhere) wins over an answer or a pause that comes before the renewal saw it', () => {
    for (const outcome of [req(0, 'Completed'), req(0, 'Paused', { pendingApprovals: pause() })]) {
      const c = apply(finish(outcome, timing), { task: task({ status: 'Running', cancelRequested: 'r0', ...held('r0') }), requests: [] });
      expect(c.result.final).toMatchObject({ requestId: 'r0', status: 'Canceled', reason: 'canceled' });
      expect(c.result.final.pendingApprovals).toBeUndefined();
      expect(c.requests).toEqual([c.result.final]);
      expect(c.task).toMatchObject({ status: 'Canceled' });
      expect(c.task.lease).toBeUndefined();
      expect(c.task.cancelRequested).toBeUndefined();
    }
    // A failure stays a failure (its reason says more); a cancel asked of another request changes nothing.
    const failed = req(0, 'Failed', { reason: 'failed' });
    expect(apply(finish(failed, timing), { task: task({ status: 'Running', cancelRequested: 'r0', ...held('r0') }), requests: [] }).result.final).toBe(failed);
    const done = req(0, 'Completed');
    expect(apply(finish(done, timing), { task: task({ status: 'Running', cancelRequested: 'r9', ...held('r0') }), requests: [] }).result.final).toBe(done);
  });

  it('a request whose lease was taken over cannot write its result (LEASE_LOST)', () => {
    expect(refusal(() => finish(req(0, 'Completed'), timing).apply({ task: task(held('r1')), requests: [] }, NOW))).toBe(ErrorCode.LEASE_LOST);
  });
});

function pause(over: Partial<PendingApprovals> = {}): PendingApprovals {
  return {
    pauseId: 'p2',
    calls: [
      { id: 'c0', name: 'read', arguments: '{}' },
      { id: 'c1', name: 'wipe', arguments: '{}' },
      { id: 'c2', name: 'edit', arguments: '{}' },
    ],
    pending: ['c1', 'c2'],
    plan: false,
    requestedAt: 'then',
    ...over,
  };
}

describe('cancel and expiry', () => {
  const pausedState = () => ({
    task: task({ status: 'Paused', queued: 'r1', pauseExpiresAt: NOW - 1 }),
    requests: [req(0, 'Paused', { pendingApprovals: pause() }), req(1, 'Queued')],
  });

  it('asks the replica running the request through the task; nothing to cancel is 409', () => {
    const c = apply(cancel(timing), { task: task({ status: 'Running', ...held('r0') }), requests: [] });
    expect(c.result).toEqual({ kind: 'requested', requestId: 'r0' });
    expect(c.task.cancelRequested).toBe('r0');
    expect(refusal(() => cancel(timing).apply({ task: task(), requests: [req(0, 'Completed')] }, NOW))).toBe(ErrorCode.TASK_NOT_RUNNING);
  });

  it('cancels a paused request and the one waiting behind it', () => {
    const c = apply(cancel(timing), pausedState());
    expect(c.result).toEqual({ kind: 'paused', requestId: 'r0' });
    expect(c.requests.map((r) => [r.requestId, r.status, r.reason])).toEqual([
      ['r0', 'Canceled', 'canceled'],
      ['r1', 'Canceled', 'canceled'],
    ]);
    expect(c.requests[0]!.pendingApprovals).toBeUndefined();
    expect(c.task).toMatchObject({ status: 'Canceled' });
  });

  it('expires a due pause (reason expired), and leaves one not yet due', () => {
    const c = apply(expirePause(timing), pausedState());
    expect(c.requests[0]).toMatchObject({ status: 'Canceled', reason: 'expired' });
    const notDue = { ...pausedState(), task: task({ status: 'Paused', pauseExpiresAt: NOW + 1 }) };
    expect(expirePause(timing).apply(notDue, NOW)).toEqual({ unchanged: undefined });
  });
});

describe('decide', () => {
  const state = (over: Partial<RequestRecord> = {}) => ({
    task: task({ status: 'Paused' }),
    requests: [
      req(0, 'Paused', {
        pendingApprovals: pause(),
        approvals: [{ pauseId: 'p1', action: 'approve', approved: ['x'], rejected: [], decidedBy: 'o', decidedAt: 'then' }],
        ...over,
      }),
    ],
  });
  const decideWith = (body: ResumeDecision) => decide({ requestId: 'r0', body, decidedBy: 'o', timing });

  it('approves the current pause: the request runs on holding the lease, the decision recorded', () => {
    const c = apply(decideWith({ action: 'approve', pause_id: 'p2' }), state());
    expect(c.result).toMatchObject({ kind: 'resumed', resume: { approved: ['c0', 'c1', 'c2'] } });
    expect(c.task).toMatchObject({ status: 'Running', lease: { requestId: 'r0' } });
    expect(c.requests[0]!.approvals!.map((a) => a.pauseId)).toEqual(['p1', 'p2']);
    expect(c.requests[0]!.pendingApprovals).toBeUndefined();
  });

  it('a decision naming another pause (a retried decision of an earlier one) is 409 and decides nothing', () => {
    expect(refusal(() => decideWith({ action: 'approve', pause_id: 'p1' }).apply(state(), NOW))).toBe(ErrorCode.APPROVAL_ALREADY_DECIDED);
  });

  it('a decision for a call that is not pending is 409; an undecided call without action is 422 naming it', () => {
    expect(refusal(() => decideWith({ action: 'approve', decisions: [{ tool_call_id: 'c0', approved: true }] }).apply(state(), NOW))).toBe(
      ErrorCode.APPROVAL_ALREADY_DECIDED,
    );
    try {
      decideWith({ decisions: [{ tool_call_id: 'c1', approved: true }] }).apply(state(), NOW);
      throw new Error('expected a refusal');
    } catch (err) {
      expect(err).toMatchObject({ code: ErrorCode.VALIDATION_FAILED, errors: [{ field: 'action', message: expect.stringContaining('c2') }] });
    }
  });

  it('decisions alone suffice when they name every pending call; reasons go to the rejected calls', () => {
    const c = apply(
      decideWith({
        decisions: [
          { tool_call_id: 'c1', approved: true },
          { tool_call_id: 'c2', approved: false, reason: 'no' },
        ],
      }),
      state(),
    );
    expect(c.result).toMatchObject({ kind: 'resumed', resume: { approved: ['c0', 'c1'], reasons: { c2: 'no' } } });
  });

  it('rejecting every pending call ends the request and the task Canceled (rejected)', () => {
    const c = apply(decideWith({ action: 'reject', reason: 'too risky' }), state());
    expect(c.result.kind).toBe('rejected');
    expect(c.requests[0]).toMatchObject({ status: 'Canceled', reason: 'rejected' });
    expect(c.requests[0]!.toolCalls.map((t) => [t.id, t.outcome])).toEqual([
      ['c0', 'canceled'],
      ['c1', 'rejected'],
      ['c2', 'rejected'],
    ]);
    expect(c.task.status).toBe('Canceled');
  });

  it('results answer client-side calls only: a result for a call waiting for approval is 409 NOT_A_CLIENT_TOOL_CALL naming it, and decides nothing', () => {
    // c1 waits for a human (autonomy level); a result in its place would skip the tool and the approval
    const approval = state({
      pendingApprovals: pause({ pending: ['c1'], calls: [{ id: 'c1', name: 'wipe', arguments: '{}', approvalReason: 'autonomy_level' }] }),
    });
    for (const body of [{ results: { c1: 'wiped' } }, { action: 'approve' as const, results: { c1: 'wiped' } }]) {
      try {
        decideWith(body).apply(approval, NOW);
        throw new Error('expected a refusal');
      } catch (err) {
        expect(err).toMatchObject({ code: 'NOT_A_CLIENT_TOOL_CALL', message: expect.stringContaining('c1') });
      }
    }
    // a call without a recorded reason (an older pause) is no client-side call either
    expect(refusal(() => decideWith({ results: { c1: 'x' }, action: 'approve' }).apply(state(), NOW))).toBe('NOT_A_CLIENT_TOOL_CALL');
  });

  it('results of the client-side calls a pause waits for decide them as done: nothing else is approved in their name', () => {
    const client = state({
      pendingApprovals: pause({
        pending: ['k1'],
        calls: [
          { id: 'c0', name: 'read', arguments: '{}' },
          { id: 'k1', name: 'ask_user', arguments: '{}', approvalReason: 'client_tool' },
        ],
      }),
    });
    const c = apply(decideWith({ results: { k1: 'yes' } }), client);
    expect(c.result).toMatchObject({ kind: 'resumed', resume: { approved: ['c0', 'k1'], provided: { k1: 'yes' } } });
  });

  it('a plan is decided as a whole (422 when split)', () => {
    const plan = state({ pendingApprovals: pause({ plan: true, pending: ['c0', 'c1', 'c2'] }) });
    expect(refusal(() => decideWith({ action: 'approve', decisions: [{ tool_call_id: 'c1', approved: false }] }).apply(plan, NOW))).toBe(
      ErrorCode.VALIDATION_FAILED,
    );
  });

  it('refuses a request that is not paused: 409 expired, already decided, or not paused', () => {
    expect(refusal(() => decideWith({ action: 'approve' }).apply({ task: task(), requests: [req(0, 'Canceled', { reason: 'expired' })] }, NOW))).toBe(
      ErrorCode.APPROVAL_EXPIRED,
    );
    expect(
      refusal(() =>
        decideWith({ action: 'approve' }).apply(
          { ...state(), task: task({ status: 'Running' }), requests: [req(0, 'Completed', { approvals: state().requests[0]!.approvals })] },
          NOW,
        ),
      ),
    ).toBe(ErrorCode.APPROVAL_ALREADY_DECIDED);
    expect(refusal(() => decideWith({ action: 'approve' }).apply({ task: task(), requests: [req(0, 'Completed')] }, NOW))).toBe(ErrorCode.TASK_NOT_PAUSED);
  });
});
