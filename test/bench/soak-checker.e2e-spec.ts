/**
 * The soak's independent checker (bench/soak/soak-checker.ts) on histories made to break each of
 * its rules: it must report every one, naming the operations that show it, and nothing on a clean
 * history.
 */
import { Attempt, checkHistory, FinalRead, formatViolations, Operation, StoredRequest, StoredTask } from '../../bench/soak/soak-checker';

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
});
