/**
 * The soak's independent checker (bench/soak/soak-checker.ts) on histories made to break each of
 * its rules: it must report every one, naming the operations that show it, and nothing on a clean
 * history.
 */
import {
  Attempt,
  checkHistory,
  CheckOptions,
  Decision,
  FinalRead,
  formatViolations,
  Operation,
  SeenEvent,
  StoredRequest,
  StoredTask,
  timesToFree,
} from '../../bench/soak/soak-checker';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const answered = (outcome = 'Completed', taskId = 't-a'): Attempt => ({ replica: 0, startedAt: NOW - 100, endedAt: NOW - 90, status: 200, taskId, outcome });
const lost = (): Attempt => ({ replica: 1, startedAt: NOW - 100, endedAt: NOW - 90, status: 0, error: 'fetch failed' });
const op = (conversation: string, index: number, attempts: Attempt[]): Operation => ({
  id: `${conversation}-${index}`,
  conversation,
  user: `user-${conversation}`,
  kind: index === 0 ? 'first' : 'follow-on',
  text: `${conversation} turn ${index}`,
  index,
  attempts,
});
/** A request as stored; a Completed one ran on the system prompt, `seq` earlier turns of two messages each, and its own. */
const stored = (text: string, seq: number, status = 'Completed', extra: Partial<StoredRequest> = {}): StoredRequest => ({
  request_id: `r-${text}-${seq}`,
  seq,
  status,
  model_input_messages: status === 'Completed' ? 2 + 2 * seq : null,
  reason: status === 'Completed' || status === 'Running' ? null : 'failed',
  updated_at: new Date(NOW - 1000).toISOString(),
  messages: [
    { role: 'user', items: [{ content: text }] },
    { role: 'assistant', content: 'ok' },
  ],
  ...extra,
});
const task = (taskId: string, requests: StoredRequest[]): StoredTask => ({ task_id: taskId, status: 'Completed', requests });
const read = (conversation: string, t: StoredTask | null, strangerStatus = 404): FinalRead => ({
  conversation,
  taskId: t?.task_id ?? 't-a',
  task: t,
  strangerStatus,
});
const check = (ops: Operation[], reads: FinalRead[]) => checkHistory(ops, reads, { readAt: NOW, runningLimitMs: 8_000 });
const rules = (ops: Operation[], reads: FinalRead[]) => check(ops, reads).map((v) => v.rule);

describe('the soak checker', () => {
  const clean = [op('a', 0, [answered()]), op('a', 1, [lost(), answered()]), op('a', 2, [answered('LLM_UNAVAILABLE')])];
  clean[2]!.attempts[0]!.status = 502;

  it('finds nothing in a clean history: a retried turn stored once, a failed one stored Failed with its reason', () => {
    expect(check(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 1', 1), stored('a turn 2', 2, 'Failed')]))])).toEqual([]);
  });

  it('a turn answered Completed but not stored: lost-turn, naming the operation', () => {
    const v = check(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 2', 2, 'Failed')]))]);
    expect(v).toEqual([expect.objectContaining({ rule: 'lost-turn', operations: ['a-1'] })]);
    expect(formatViolations(v, clean)).toContain('a-1 (follow-on #1 of a, "a turn 1"): r1 fetch failed');
  });

  it('a retried turn stored twice: duplicate-turn', () => {
    expect(rules(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 1', 1), stored('a turn 1', 2)]))])).toEqual(['duplicate-turn']);
  });

  it("a turn stored in another conversation's task: foreign-turn", () => {
    const ops = [op('a', 0, [answered()]), op('b', 0, [answered('Completed', 't-b')])];
    const reads = [read('a', task('t-a', [stored('a turn 0', 0), stored('b turn 0', 1)])), read('b', task('t-b', [stored('b turn 0', 0)]))];
    expect(rules(ops, reads)).toEqual(['duplicate-turn', 'foreign-turn']);
  });

  it('turns stored out of the order they were sent: order', () => {
    expect(rules(clean, [read('a', task('t-a', [stored('a turn 1', 0), stored('a turn 0', 1), stored('a turn 2', 2, 'Failed')]))])).toEqual(['order']);
  });

  it('a request Running past the lease and grace: stuck-running; one within it is fine', () => {
    const old = stored('a turn 2', 2, 'Running', { updated_at: new Date(NOW - 60_000).toISOString() });
    expect(rules(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 1', 1), old]))])).toEqual(['stuck-running']);
    const recent = stored('a turn 2', 2, 'Running', { updated_at: new Date(NOW - 2_000).toISOString() });
    expect(rules(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 1', 1), recent]))])).toEqual([]);
  });

  it('a turn that ran without an earlier completed turn in its input (two admitted at once): interleaved', () => {
    const blind = stored('a turn 1', 1, 'Completed', { model_input_messages: 2 });
    const v = check(clean, [read('a', task('t-a', [stored('a turn 0', 0), blind, stored('a turn 2', 2, 'Failed')]))]);
    expect(v).toEqual([expect.objectContaining({ rule: 'interleaved', operations: ['a-1'] })]);
  });

  it('a failed turn stored without a reason, or stored Completed though never answered', () => {
    const noReason = stored('a turn 2', 2, 'Failed', { reason: null });
    expect(rules(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 1', 1), noReason]))])).toEqual(['failure-without-reason']);
  });

  it('an answer naming another task, and a task another user can read', () => {
    const ops = [op('a', 0, [answered('Completed', 't-zzz')])];
    expect(rules(ops, [read('a', task('t-a', [stored('a turn 0', 0)]), 200)])).toEqual(['answer-task', 'foreign-read']);
  });

  describe('tools and approvals', () => {
    // Conversation t: turn 0 called the tool that runs at once (k-auto), turn 1 paused and was
    // approved (k-ok), turn 2 paused and was rejected (k-no), turn 3 paused and expired (k-late).
    const decision = (kind: Decision['kind'], callId: string, status: number, outcome: string): Decision => ({
      kind,
      requestId: `r-${callId}`,
      pauseId: `p-${callId}`,
      callIds: [callId],
      attempts: [{ ...answered(outcome, 't-t'), status }],
    });
    const paused = (): Attempt => ({ ...answered('Paused', 't-t') });
    const toolOps = () => {
      const ops = [op('t', 0, [answered('Completed', 't-t')]), op('t', 1, [paused()]), op('t', 2, [paused()]), op('t', 3, [paused()])];
      ops[1]!.decisions = [decision('approve', 'k-ok', 200, 'Completed'), decision('stale', 'k-ok', 409, 'APPROVAL_ALREADY_DECIDED')];
      ops[2]!.decisions = [decision('reject', 'k-no', 200, 'Canceled')];
      ops[3]!.decisions = [decision('expire', 'k-late', 409, 'APPROVAL_EXPIRED')];
      return ops;
    };
    const toolTask = task('t-t', [
      stored('t turn 0', 0, 'Completed', { tool_calls: [{ id: 'k-auto', name: 'SoakTools-count', outcome: 'ok' }] }),
      // Resumed after its approval: its input also held its paused model turn.
      stored('t turn 1', 1, 'Completed', {
        tool_calls: [{ id: 'k-ok', name: 'SoakTools-guarded', outcome: 'ok' }],
        approvals: [{ pause_id: 'p-k-ok' }],
        model_input_messages: 5,
      }),
      stored('t turn 2', 2, 'Canceled', { reason: 'rejected' }),
      stored('t turn 3', 3, 'Canceled', { reason: 'expired' }),
    ]);
    const issued = ['k-auto', 'k-ok', 'k-no', 'k-late'].map((id, i) => ({ id, tool: i ? 'SoakTools-guarded' : 'SoakTools-count', text: `t turn ${i}` }));
    const runs = (changes: Record<string, number> = {}) => new Map(Object.entries({ 'k-auto': 1, 'k-ok': 1, 'k-no': 0, 'k-late': 0, ...changes }));
    const checkTools = (ops: Operation[], counted: Map<string, number>, t: StoredTask = toolTask) => {
      const options: CheckOptions = { readAt: NOW, runningLimitMs: 8_000, tools: { issued, runs: counted } };
      return checkHistory(ops, [{ conversation: 't', taskId: 't-t', task: t, strangerStatus: 404 }], options);
    };

    it('finds nothing when each call ran once, the rejected and expired ones never, and the stale decision was refused', () => {
      expect(checkTools(toolOps(), runs())).toEqual([]);
    });

    it('a call whose side effect happened twice: tool-ran-twice, naming the turn that asked for it', () => {
      expect(checkTools(toolOps(), runs({ 'k-auto': 2 }))).toEqual([expect.objectContaining({ rule: 'tool-ran-twice', operations: ['t-0'] })]);
    });

    it('a rejected call, or one whose pause expired, that ran: rejected-ran (once per call though client and store both show it)', () => {
      const v = checkTools(toolOps(), runs({ 'k-no': 1, 'k-late': 1 }));
      expect(v.map((x) => [x.rule, x.operations])).toEqual([
        ['rejected-ran', ['t-2']],
        ['rejected-ran', ['t-3']],
      ]);
    });

    it('an approved call (answered Completed) that never ran: approved-lost; also a call stored as run that never ran', () => {
      expect(checkTools(toolOps(), runs({ 'k-ok': 0 })).map((x) => x.rule)).toEqual(['approved-lost']);
      expect(checkTools(toolOps(), runs({ 'k-auto': 0 })).map((x) => [x.rule, x.operations])).toEqual([['approved-lost', ['t-0']]]);
    });

    it('a stale decision accepted, and an approve after the TTL accepted: stale-decision, expired-decided', () => {
      const ops = toolOps();
      ops[1]!.decisions![1] = decision('stale', 'k-ok', 200, 'Completed');
      ops[3]!.decisions![0] = decision('expire', 'k-late', 200, 'Completed');
      expect(checkTools(ops, runs()).map((x) => x.rule)).toEqual(['stale-decision', 'expired-decided']);
    });

    it('a resumed request whose input lacked an earlier completed turn is still interleaved', () => {
      const t = { ...toolTask, requests: toolTask.requests.map((r) => (r.seq === 1 ? { ...r, model_input_messages: 3 } : r)) };
      expect(checkTools(toolOps(), runs(), t).map((x) => x.rule)).toEqual(['interleaved']);
    });
  });

  describe('cancels, edits, forks and deletes', () => {
    // Conversation e: turn 0; turn 1, then replaced by an edit (turn 2); turn 3 sent slow and
    // canceled while it ran; a fork up to turn 0. Conversation d: one turn, then its task deleted.
    const edited = 'r-e turn 1-1';
    const editId = 'r-e turn 2 edit-2';
    const canceledId = 'r-e turn 3-3';
    const taskOps = () => {
      const ops = [
        op('e', 0, [answered('Completed', 't-e')]),
        op('e', 1, [answered('Completed', 't-e')]),
        { ...op('e', 2, [{ ...answered('Completed', 't-e'), requestId: editId }]), id: 'e-edit', kind: 'edit' as const, text: 'e turn 2 edit', target: edited },
        op('e', 3, [answered('Canceled', 't-e')]),
        {
          ...op('e', 3, [{ ...answered('Canceled', 't-e'), requestId: canceledId }]),
          id: 'e-cancel',
          kind: 'cancel' as const,
          text: 'e cancel',
          target: 'e-3',
        },
        {
          ...op('e', 4, [{ ...answered('Completed', 'f-1'), status: 201 }]),
          id: 'e-fork',
          kind: 'fork' as const,
          text: 'e fork',
          target: 'r-e turn 0-0',
          forkTexts: ['e turn 0'],
        },
        op('d', 0, [answered('Completed', 't-d')]),
        { ...op('d', 1, [{ ...answered('', 't-d'), status: 204, outcome: undefined }]), id: 'd-delete', kind: 'delete' as const, text: 'd delete' },
      ];
      return ops;
    };
    const eTask = (changes: (r: StoredRequest) => StoredRequest = (r) => r) =>
      task(
        't-e',
        [
          stored('e turn 0', 0),
          stored('e turn 1', 1, 'Completed', { superseded_by: editId }),
          // The edit ran on the system prompt, turn 0 and itself: turn 1 is superseded.
          stored('e turn 2 edit', 2, 'Completed', { edit_of: edited, model_input_messages: 4 }),
          stored('e turn 3', 3, 'Canceled', { reason: 'canceled' }),
        ].map(changes),
      );
    const reads = (e: StoredTask = eTask(), fork: StoredTask = task('f-1', [stored('e turn 0', 0)]), d: StoredTask | null = null): FinalRead[] => [
      read('e', e),
      { conversation: 'e', taskId: 'f-1', task: fork, strangerStatus: 404, forkOf: 'e-fork' },
      { conversation: 'd', taskId: 't-d', task: d, strangerStatus: 404 },
    ];

    it('finds nothing when the deleted task is gone, the canceled turn Canceled, the edit supersedes what it edited and the fork holds what it listed', () => {
      expect(check(taskOps(), reads())).toEqual([]);
    });

    it('a task its owner still reads after its DELETE was answered 204: deleted-visible', () => {
      expect(rules(taskOps(), reads(eTask(), undefined, task('t-d', [stored('d turn 0', 0)])))).toEqual(['deleted-visible']);
    });

    it('a request a cancel was answered 200 for, stored Completed: cancel-outcome, naming the cancel and the turn', () => {
      const v = check(taskOps(), reads(eTask((r) => (r.request_id === canceledId ? { ...r, status: 'Completed', reason: null, model_input_messages: 6 } : r))));
      expect(v).toEqual([expect.objectContaining({ rule: 'cancel-outcome', operations: ['e-cancel', 'e-3'] })]);
    });

    it('an edit stored as the edit of another request, or leaving what it edited current: edit-history', () => {
      expect(rules(taskOps(), reads(eTask((r) => (r.request_id === editId ? { ...r, edit_of: 'r-e turn 0-0' } : r))))).toEqual(['edit-history']);
      // The edited turn not superseded: the edit's input also misses it (interleaved), and edit-history says why.
      expect(rules(taskOps(), reads(eTask((r) => (r.request_id === edited ? { ...r, superseded_by: null } : r))))).toEqual(['interleaved', 'edit-history']);
    });

    it('a fork holding other turns than its 201 listed, or turns out of order, or not ending at the request asked: fork-history', () => {
      expect(rules(taskOps(), reads(eTask(), task('f-1', [stored('e turn 0', 0), stored('e turn 1', 1)])))).toEqual(['fork-history']);
      const ops = taskOps();
      ops[5]!.forkTexts = ['e turn 1', 'e turn 0'];
      expect(rules(ops, reads(eTask(), task('f-1', [stored('e turn 1', 0), stored('e turn 0', 1)])))).toEqual(['fork-history']);
      ops[5]!.forkTexts = ['e turn 0', 'e turn 1'];
      expect(rules(ops, reads(eTask(), task('f-1', [stored('e turn 0', 0), stored('e turn 1', 1)])))).toEqual(['fork-history']);
    });
  });

  describe('a follow-on queued behind a busy task (on_busy: enqueue)', () => {
    // Conversation q: turn 0, then two turns at once: 1a ran, 1b was answered 202 Queued and ran after it.
    const queued = (): Attempt => ({ ...answered('Queued', 't-q'), status: 202, requestId: 'r-q turn 1b-2' });
    const queueOps = () => [
      op('q', 0, [answered('Completed', 't-q')]),
      { ...op('q', 1, [answered('Completed', 't-q')]), id: 'q-1a', text: 'q turn 1a' },
      { ...op('q', 1, [queued()]), id: 'q-1b', text: 'q turn 1b' },
    ];
    const qTask = (requests: StoredRequest[]) => [read('q', task('t-q', requests))];

    it('finds nothing when the queued turn is stored after the one it waited for', () => {
      expect(check(queueOps(), qTask([stored('q turn 0', 0), stored('q turn 1a', 1), stored('q turn 1b', 2)]))).toEqual([]);
    });

    it('a queued turn that was never stored: queued-lost; one stored before the turn it waited for: queue-order', () => {
      expect(rules(queueOps(), qTask([stored('q turn 0', 0), stored('q turn 1a', 1)]))).toEqual(['queued-lost']);
      const v = check(queueOps(), qTask([stored('q turn 0', 0), stored('q turn 1b', 1), stored('q turn 1a', 2)]));
      expect(v).toEqual([expect.objectContaining({ rule: 'queue-order', operations: ['q-1a', 'q-1b'] })]);
    });

    it('both turns of a pair answered 202 Queued (both behind an earlier request still running): stored in either order, nothing found', () => {
      // An earlier request still running when the pair is sent (for instance one whose replica was
      // killed under it: it holds the task until its lease lapses): each waits behind it, not behind
      // its pair, and the queue keeps them in the order they were admitted.
      const bothQueued = () => [
        op('q', 0, [answered('Completed', 't-q')]),
        { ...op('q', 1, [{ ...queued(), requestId: 'r-q turn 1a-1' }]), id: 'q-1a', text: 'q turn 1a' },
        { ...op('q', 1, [queued()]), id: 'q-1b', text: 'q turn 1b' },
      ];
      expect(check(bothQueued(), qTask([stored('q turn 0', 0), stored('q turn 1b', 1), stored('q turn 1a', 2)]))).toEqual([]);
      expect(check(bothQueued(), qTask([stored('q turn 0', 0), stored('q turn 1a', 1), stored('q turn 1b', 2)]))).toEqual([]);
    });

    it('a queued turn still Queued long after the end: stuck-running; ended Canceled without a reason: failure-without-reason', () => {
      const waiting = stored('q turn 1b', 2, 'Queued', { updated_at: new Date(NOW - 60_000).toISOString() });
      expect(rules(queueOps(), qTask([stored('q turn 0', 0), stored('q turn 1a', 1), waiting]))).toEqual(['stuck-running']);
      expect(rules(queueOps(), qTask([stored('q turn 0', 0), stored('q turn 1a', 1), stored('q turn 1b', 2, 'Canceled', { reason: null })]))).toEqual([
        'failure-without-reason',
      ]);
    });
  });

  it('a cancel answered 202 (asked through the task): the request must not be stored Completed, however soon its answer came', () => {
    const cancelAt = NOW - 5_000;
    const turn = { ...op('k', 1, [{ ...answered('Completed', 't-k'), startedAt: cancelAt - 300, endedAt: cancelAt + 50 }]), text: 'k turn 1 [slow]' };
    const cancelOp: Operation = {
      ...op('k', 1, [{ ...answered('Canceled', 't-k'), status: 202, requestId: 'r-k turn 1 [slow]-1', startedAt: cancelAt - 20, endedAt: cancelAt }]),
      id: 'k-cancel',
      kind: 'cancel',
      text: 'k cancel',
      target: turn.id,
    };
    const ops = [op('k', 0, [answered('Completed', 't-k')]), turn, cancelOp];
    const check = (stored1: ReturnType<typeof stored>) =>
      checkHistory(ops, [read('k', task('t-k', [stored('k turn 0', 0), stored1]))], { readAt: NOW, runningLimitMs: 8_000 }).map((v) => v.rule);
    expect(check(stored('k turn 1 [slow]', 1))).toEqual(['cancel-outcome']);
    // Stored Canceled, and its client told so: clean.
    turn.attempts[0] = { ...turn.attempts[0]!, outcome: 'Canceled' };
    expect(check(stored('k turn 1 [slow]', 1, 'Canceled', { reason: 'canceled' }))).toEqual([]);
    turn.attempts[0] = { ...turn.attempts[0]!, outcome: 'Completed' };
    // Answered 200 (canceled here): the same.
    cancelOp.attempts[0]!.status = 200;
    expect(check(stored('k turn 1 [slow]', 1))).toEqual(['cancel-outcome']);
  });

  describe('a streamed turn reattached on other replicas', () => {
    const FINAL = '1-9007199254740991';
    const seen = (connection: number, id: string | undefined, event = 'partial-response'): SeenEvent => ({ id, event, connection });
    const streamed = (events: SeenEvent[]) => {
      const ops = [op('s', 0, [answered('Completed', 't-s')]), op('s', 1, [{ ...answered('', 't-s'), outcome: undefined }, answered('Completed', 't-s')])];
      ops[1]!.events = events;
      return ops;
    };
    const sTask = [read('s', task('t-s', [stored('s turn 0', 0), stored('s turn 1', 1)]))];
    const clean = [seen(0, '1-0'), seen(0, '1-1'), seen(1, '1-2'), seen(1, '1-3'), seen(2, FINAL, 'final-response')];

    it('finds nothing when each event was seen once, in order, the final one last', () => {
      expect(check(streamed(clean), sTask)).toEqual([]);
    });

    it('an event a reattach replayed though the client had seen it: stream-events', () => {
      const v = check(streamed([seen(0, '1-0'), seen(0, '1-1'), seen(1, '1-1'), seen(1, FINAL, 'final-response')]), sTask);
      expect(v).toEqual([expect.objectContaining({ rule: 'stream-events', operations: ['s-1'] })]);
      expect(v[0]!.detail).toBe('event 1-1 (partial-response) seen twice, again on connection 1');
    });

    it('events out of order, of another request, or after the final one: stream-events', () => {
      expect(rules(streamed([seen(0, '1-0'), seen(0, '1-2'), seen(1, '1-1'), seen(1, FINAL, 'final-response')]), sTask)).toEqual(['stream-events']);
      expect(rules(streamed([seen(0, '1-0'), seen(1, '2-1'), seen(1, FINAL, 'final-response')]), sTask)).toEqual(['stream-events']);
      expect(rules(streamed([seen(0, '1-0'), seen(0, FINAL, 'final-response'), seen(1, '1-1')]), sTask)).toEqual(['stream-events']);
    });
  });

  describe('faults', () => {
    it('a Running request stamped far ahead (by a replica whose clock was skewed) is stuck-running too, not hidden by the future time', () => {
      const ahead = stored('a turn 2', 2, 'Running', { updated_at: new Date(NOW + 30_000).toISOString() });
      expect(rules(clean, [read('a', task('t-a', [stored('a turn 0', 0), stored('a turn 1', 1), ahead]))])).toEqual(['stuck-running']);
    });

    it("the time for a killed replica's tasks to be free: from the kill to the first admitted attempt of a later turn on a task it held", () => {
      const kill = { at: NOW, replica: 1 };
      const at = (replica: number, from: number, to: number, status: number, extra: Partial<Attempt> = {}): Attempt => ({
        replica,
        startedAt: NOW + from,
        endedAt: NOW + to,
        status,
        ...extra,
      });
      const ops = [
        // Held by replica 1 when it was killed: its retry answered ABANDONED once the lease lapsed, then the next turn was admitted at +3.9 s.
        op('h', 1, [at(1, -500, 10, 0, { error: 'fetch failed' }), at(0, 300, 3_800, 503, { outcome: 'ABANDONED' })]),
        op('h', 2, [at(0, 3_900, 3_950, 200, { outcome: 'Completed' })]),
        // Dropped by its own client at the kill (not cut by it), and one on another replica: not held.
        op('x', 1, [at(1, -20, 5, 0, { error: 'dropped by the client' })]),
        op('x', 2, [at(0, 100, 150, 200, { outcome: 'Completed' })]),
        op('y', 1, [at(0, -100, 50, 200, { outcome: 'Completed' })]),
      ];
      expect(timesToFree(ops, [kill])).toEqual([3_900]);
      // No later turn admitted: nothing to measure.
      expect(timesToFree(ops.slice(0, 1), [kill])).toEqual([]);
    });
  });
});
