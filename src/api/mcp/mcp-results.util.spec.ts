import { ErrorCode } from '../../common/errors/error-code';
import { buildProblem } from '../../common/errors/problem-details';
import type { StateResponse } from '../../tasks/views/state-response';
import { decisionOfElicitation, elicitationOf, errorResult, pauseOf, pauseResult, queuedResult, statelessResult, turnResult } from './mcp-results.util';

const IDS = { task_id: 't1', session_id: 's1', request_id: 'r1' };
const PAUSE_ID = '0f0e0d0c-0000-4000-8000-000000000001';

const paused: StateResponse = {
  ...IDS,
  status: 'Paused',
  content: {
    ...IDS,
    message: 'Human intervention required.',
    pause_id: PAUSE_ID,
    expires_at: '2026-11-28T06:00:00.000Z',
    tool_calls: [{ id: 'w1', name: 'Notes-wipe', arguments: '{"id":"a"}', risk: 'destructive', approval_reason: 'L1', index: 0 }],
  },
};

describe('MCP results', () => {
  it('a completed turn: the output as text, the ids and status as structured content', () => {
    const r = turnResult({ ...IDS, status: 'Completed', content: { ...IDS, output: 'hello', source: 'A:1', token_usage: {} as never, extra_data: null } });
    expect(r).toEqual({ content: [{ type: 'text', text: 'hello' }], structuredContent: { status: 'Completed', ...IDS, output: 'hello' } });
  });

  it('a canceled turn names its reason', () => {
    const r = turnResult({ ...IDS, status: 'Canceled', content: { ...IDS, message: 'Tool excecution rejected.', reason: 'rejected' } });
    expect(r.structuredContent).toEqual({ status: 'Canceled', ...IDS, reason: 'rejected', message: 'Tool excecution rejected.' });
    expect(r.content[0]!.text).toBe('Canceled (rejected): Tool excecution rejected.');
  });

  it('a pause: the pending calls, the pause id and the decide call that answers it', () => {
    const pause = pauseOf(paused);
    expect(pause).toEqual({
      ...IDS,
      pause_id: PAUSE_ID,
      expires_at: '2026-11-28T06:00:00.000Z',
      pending_calls: [{ id: 'w1', name: 'Notes-wipe', arguments: '{"id":"a"}', risk: 'destructive', approval_reason: 'L1' }],
    });
    const r = turnResult(paused);
    expect(r).toEqual(pauseResult(pause));
    expect(r.structuredContent).toMatchObject({ status: 'Paused', decide: { tool: 'decide', arguments: { task_id: 't1', pause_id: PAUSE_ID } } });
    expect(r.content[0]!.text).toBe(
      `Paused: Notes-wipe({"id":"a"}) [destructive] needs approval. Call decide with task_id "t1", pause_id "${PAUSE_ID}" and action "approve" or "reject".`,
    );
  });

  it('a queued request and a stateless answer', () => {
    expect(queuedResult(IDS).structuredContent).toEqual({ status: 'Queued', ...IDS });
    const r = statelessResult({
      session_id: 's',
      source: 'E:1',
      request_id: 'r',
      token_usage: {} as never,
      extra_data: null,
      output_raw: 'hi',
      output_pydantic: null,
    });
    expect(r).toEqual({ content: [{ type: 'text', text: 'hi' }], structuredContent: { status: 'Completed', session_id: 's', request_id: 'r', output: 'hi' } });
  });

  it('an error is a tool error carrying our code and the problem details', () => {
    const r = errorResult(buildProblem(ErrorCode.NOT_OWNER, 'Task t1 belongs to someone else', '/A/1/mcp'));
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toBe('NOT_OWNER: Task t1 belongs to someone else');
    expect(r.structuredContent).toMatchObject({ code: 'NOT_OWNER', status: 401, instance: '/A/1/mcp' });
  });

  it('the elicitation is a flat form: a decision (approve or reject) and an optional reason', () => {
    const e = elicitationOf(pauseOf(paused));
    expect(e.mode).toBe('form');
    expect(e.message).toBe('Approve Notes-wipe({"id":"a"}) [destructive]? (undecided, the pause expires at 2026-11-28T06:00:00.000Z)');
    expect(e.requestedSchema.required).toEqual(['decision']);
    expect(Object.values(e.requestedSchema.properties).every((p) => p.type === 'string')).toBe(true);
  });

  it.each([
    [
      { action: 'accept', content: { decision: 'approve' } },
      { action: 'approve', pause_id: PAUSE_ID },
    ],
    [
      { action: 'accept', content: { decision: 'reject', reason: '  not now ' } },
      { action: 'reject', pause_id: PAUSE_ID, reason: 'not now' },
    ],
    [{ action: 'accept', content: { decision: 'maybe' } }, undefined],
    [{ action: 'accept' }, undefined],
    [{ action: 'decline' }, undefined],
    [{ action: 'cancel' }, undefined],
    [undefined, undefined],
  ])('the elicitation answer %j decides %j', (answer, decision) => {
    expect(decisionOfElicitation(answer, PAUSE_ID)).toEqual(decision);
  });
});
