import { DomainError } from '../../common/errors/domain-error';
import type { LoggedEvent } from '../../tasks/events/task-event-log.service';
import { AgUiEventMapper } from './event-mapper';
import { turnOf } from './new-turn';
import { resumeDecisionOf } from './resume-decision';
import { parseRunInput } from './run-input';

const ids = { threadId: 'T', runId: 'R', task_id: 'T', session_id: 'S', request_id: 'Q' };
let n = 0;
const ev = (event: string, data: Record<string, unknown> = {}): LoggedEvent => ({ id: `0-${n}`, n: n++, event, data });
const pause = (reason: string) => ({
  task_id: 'T',
  request_id: 'Q',
  pause_id: 'P',
  message: 'Human intervention required.',
  plan: false,
  expires_at: '2030-01-01T00:00:00.000Z',
  tool_calls: [{ id: 'c1', name: 'Notes-wipe', arguments: '{"id":"a"}', risk: 'write_high_risk', approval_reason: reason }],
});

describe('AgUiEventMapper', () => {
  it('maps text per model turn, tool calls under the turn that asked, and the outcome after a state snapshot', () => {
    const m = new AgUiEventMapper(ids);
    const out = [
      ev('partial-response', { output_partial: 'Let me ' }),
      ev('partial-response', { output_partial: 'look.' }),
      ev('tool-call', { tool_call_id: 'c1', name: 'Notes-read', arguments: '{}' }),
      ev('tool-result', { tool_call_id: 'c1', result: 'note' }),
      ev('partial-response', { output_partial: 'Found it.' }),
      ev('final-response', { status: 'Completed', content: { output: 'Found it.' } }),
    ].flatMap((e) => m.map(e));
    expect(out.map((e) => e.type)).toEqual([
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STATE_SNAPSHOT',
    ]);
    expect(out[4]).toMatchObject({ parentMessageId: (out[0] as unknown as { messageId: string }).messageId });
    expect(m.terminal).toMatchObject({
      type: 'RUN_FINISHED',
      threadId: 'T',
      runId: 'R',
      outcome: { type: 'success' },
      result: 'Found it.',
      metadata: { request_id: 'Q' },
    });
  });

  it('sends a final answer that was not streamed whole', () => {
    const m = new AgUiEventMapper(ids);
    const out = m.map(ev('final-response', { status: 'Completed', content: { output: 'all at once' } }));
    expect(out.map((e) => e.type)).toEqual(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'STATE_SNAPSHOT']);
  });

  it('a pause for approval: the pending calls, then an interrupt outcome with the pause id', () => {
    const m = new AgUiEventMapper(ids);
    const out = m.map(ev('approval-required', pause('autonomy_level')));
    expect(out.map((e) => e.type)).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'STATE_SNAPSHOT']);
    expect(m.map(ev('final-response', { status: 'Paused' }))).toEqual([]);
    expect(m.terminal).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'interrupt', interrupts: [{ id: 'P', toolCallId: 'c1', reason: 'autonomy_level', expiresAt: '2030-01-01T00:00:00.000Z' }] },
    });
  });

  it('a pause on client-side tools finishes with pendingToolCallIds; their results are not echoed on the next run', () => {
    const m = new AgUiEventMapper(ids);
    m.map(ev('approval-required', pause('client_tool')));
    expect(m.terminal).toMatchObject({ outcome: { type: 'success', pendingToolCallIds: ['c1'] } });
    const next = new AgUiEventMapper(ids, { announced: ['c1'], answered: ['c1'] });
    expect(next.map(ev('tool-call', { tool_call_id: 'c1', name: 'x', arguments: '{}' }))).toEqual([]);
    expect(next.map(ev('tool-result', { tool_call_id: 'c1', result: 'r' }))).toEqual([]);
  });

  it('an error frame is RUN_ERROR with our code; a cancel finishes cancelled', () => {
    const failed = new AgUiEventMapper(ids);
    failed.map(ev('error', { code: 'LLM_TIMEOUT', detail: 'The model timed out' }));
    expect(failed.terminal).toMatchObject({ type: 'RUN_ERROR', code: 'LLM_TIMEOUT', message: 'The model timed out' });
    const canceled = new AgUiEventMapper(ids);
    canceled.map(ev('final-response', { status: 'Canceled', content: { reason: 'rejected' } }));
    expect(canceled.terminal).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
  });
});

describe('RunAgentInput reading', () => {
  it('the new turn is the last user message; trailing tool messages are client tool results', () => {
    expect(
      turnOf([
        { id: '1', role: 'user', content: 'old' },
        { id: '2', role: 'assistant', content: 'a' },
        { id: '3', role: 'user', content: 'new' },
      ]),
    ).toEqual({
      kind: 'message',
      items: [{ content_type: 'text', content: 'new' }],
    });
    expect(
      turnOf([
        { id: '1', role: 'user', content: 'q' },
        { id: '2', role: 'assistant', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { id: '3', role: 'tool', toolCallId: 'c1', content: [{ type: 'text', text: 'yes' }] },
      ]),
    ).toEqual({ kind: 'tool-results', results: { c1: 'yes' } });
    expect(() => turnOf([])).toThrow(DomainError);
  });

  it('resume entries are the decision on one pause: an action, per-call decisions, a reason', () => {
    expect(resumeDecisionOf([{ interruptId: 'P', status: 'resolved', payload: { approved: true } }])).toEqual({ pause_id: 'P', action: 'approve' });
    expect(resumeDecisionOf([{ interruptId: 'P', status: 'cancelled', payload: { reason: 'no' } }])).toEqual({ pause_id: 'P', action: 'reject', reason: 'no' });
    expect(
      resumeDecisionOf([
        { interruptId: 'P', status: 'resolved', payload: { approved: true, toolCallId: 'c1' } },
        { interruptId: 'P', status: 'resolved', payload: { approved: false, toolCallId: 'c2', reason: 'not that one' } },
      ]),
    ).toEqual({
      pause_id: 'P',
      decisions: [
        { tool_call_id: 'c1', approved: true },
        { tool_call_id: 'c2', approved: false, reason: 'not that one' },
      ],
    });
    expect(() => resumeDecisionOf([{ interruptId: 'P', status: 'resolved' }])).toThrow(/payload.approved/);
    expect(() =>
      resumeDecisionOf([
        { interruptId: 'P', status: 'resolved', payload: { approved: true } },
        { interruptId: 'P', status: 'cancelled' },
      ]),
    ).toThrow(/both approve and reject/);
  });

  it('checks the fields it reads and lists every problem', () => {
    expect(() => parseRunInput({ threadId: 't', runId: 'r', messages: [], tools: [], context: [] })).not.toThrow();
    try {
      parseRunInput({ threadId: '', runId: 1, messages: [{ role: 'tool' }], resume: [{ interruptId: 'x', status: 'maybe' }] });
      throw new Error('expected a failure');
    } catch (err) {
      expect((err as DomainError).errors!.map((e) => e.field)).toEqual(['threadId', 'runId', 'messages[0].toolCallId', 'resume[0].status']);
    }
  });
});
