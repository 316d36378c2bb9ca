import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { buildProblem } from '../../common/errors/problem-details';
import type { LoggedEvent } from '../../tasks/events/task-event-log.service';
import { renamedFields, statelessBodyOf, userMessageOf } from './agent-input.util';
import { readChatRequest } from './chat-request.util';
import { CompletionChunks, StatefulChunkMapper } from './completion-chunks.util';
import { chatCompletion, headOf, statefulAnswer } from './completion.util';
import { modelNotFound, openAiErrorOf } from './openai-error.util';

const fieldsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as DomainError).errors;
  }
  throw new Error('expected a validation error');
};

describe('readChatRequest', () => {
  it('reads model, messages (strings and parts), stream options and our ids from metadata; ignores sampling parameters', () => {
    const chat = readChatRequest({
      model: 'Assistant/1',
      temperature: 0.3,
      max_tokens: 10,
      messages: [
        { role: 'system', content: 'Be nice.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
      metadata: { task_id: 't-1', session_id: 's-1', other: 'kept out' },
    });
    expect(chat).toEqual({
      model: 'Assistant/1',
      messages: [
        { role: 'system', items: [{ content_type: 'text', content: 'Be nice.' }], index: 0 },
        {
          role: 'user',
          items: [
            { content_type: 'text', content: 'look' },
            { content_type: 'image', content: 'data:image/png;base64,AAAA' },
          ],
          index: 1,
        },
      ],
      stream: true,
      includeUsage: true,
      taskId: 't-1',
      sessionId: 's-1',
    });
  });

  it('reports every field it cannot honour at once, by the path the client sent', () => {
    expect(
      fieldsOf(() =>
        readChatRequest({
          messages: [
            { role: 'tool', content: 'r', tool_call_id: 'x' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'c' }] },
            { role: 'user', content: [{ type: 'input_audio', input_audio: {} }] },
          ],
          n: 2,
          tools: [{ type: 'function' }],
          stream: 'yes',
          metadata: { task_id: 'no spaces please' },
        }),
      )!.map((e) => e.field),
    ).toEqual(['model', 'messages.0.role', 'messages.1.tool_calls', 'messages.2.content.0', 'stream', 'n', 'tools', 'metadata.task_id']);
    expect(fieldsOf(() => readChatRequest({ model: 'a/1', messages: [] }))!.map((e) => e.field)).toEqual(['messages']);
    expect(fieldsOf(() => readChatRequest('hi'))!.map((e) => e.field)).toEqual(['']);
  });
});

describe('agent inputs', () => {
  const chat = readChatRequest({
    model: 'a/1',
    messages: [
      { role: 'developer', content: 'd' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
    ],
    metadata: { task_id: 't', session_id: 's' },
  });

  it("a stateless agent's chat_history is the user and assistant messages; its errors name the client's fields", () => {
    const { body, fieldOf } = statelessBodyOf(chat);
    expect(body).toEqual({
      chat_history: [
        { role: 'user', items: [{ content_type: 'text', content: 'one' }] },
        { role: 'assistant', items: [{ content_type: 'text', content: 'two' }] },
        { role: 'user', items: [{ content_type: 'text', content: 'three' }] },
      ],
      session_id: 's',
    });
    expect(fieldOf('chat_history.2.items.0.content')).toBe('messages.3.content.0');
    expect(fieldOf('chat_history.0.role')).toBe('messages.1.role');
    expect(fieldOf('session_id')).toBe('metadata.session_id');
  });

  it("a stateful agent's turn is the last message (the user's) with the task and session ids", () => {
    const { body, fieldOf } = userMessageOf(chat);
    expect(body).toEqual({ items: [{ content_type: 'text', content: 'three' }], task_id: 't', session_id: 's' });
    expect(fieldOf('items.0.content')).toBe('messages.3.content.0');
    expect(fieldOf('task_id')).toBe('metadata.task_id');
    const renamed = renamedFields(new DomainError(ErrorCode.VALIDATION_FAILED, 'x', { errors: [{ field: 'items.0.content', message: 'bad image' }] }), fieldOf);
    expect((renamed as DomainError).errors).toEqual([{ field: 'messages.3.content.0', message: 'bad image' }]);
    const notUser = readChatRequest({
      model: 'a/1',
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'a' },
      ],
    });
    expect(fieldsOf(() => userMessageOf(notUser))!.map((e) => e.field)).toEqual(['messages']);
  });
});

const IDS = { task_id: 't', session_id: 's', request_id: 'r' };
const PAUSED = {
  ...IDS,
  status: 'Paused',
  content: {
    ...IDS,
    message: 'Human intervention required.',
    approval_url: '/N/1/tealagents/v1alpha1/resume/r?action=approve&pause_id=p',
    rejection_url: '/N/1/tealagents/v1alpha1/resume/r?action=reject&pause_id=p',
    tool_calls: [{ id: 'c1', name: 'Notes-wipe', arguments: '{"id":"a"}', risk: 'write_high_risk', approval_reason: 'autonomy_level', index: 0 }],
    plan: false,
    pause_id: 'p',
    autonomy_level: 'L1',
    expires_at: null,
  },
};

describe('answers', () => {
  const head = headOf('r', 'N/1', 1_700_000_000_500);

  it('a completed turn: its output, usage and ids', () => {
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
    const completed = { ...IDS, status: 'Completed', content: { ...IDS, output: 'done', token_usage: usage } };
    expect(chatCompletion(head, statefulAnswer(completed))).toEqual({
      id: 'chatcmpl-r',
      created: 1_700_000_000,
      model: 'N/1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'done', refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage,
      metadata: { ...IDS, status: 'Completed' },
    });
  });

  it('a pause: a message naming the calls and the URLs, the pause in metadata, no usage', () => {
    const answer = statefulAnswer(PAUSED);
    expect(answer.metadata).toEqual({
      ...IDS,
      status: 'Paused',
      pause_id: 'p',
      approval_url: PAUSED.content.approval_url,
      rejection_url: PAUSED.content.rejection_url,
      expires_at: null,
      plan: false,
      pending_calls: [{ id: 'c1', name: 'Notes-wipe', arguments: '{"id":"a"}', risk: 'write_high_risk', approval_reason: 'autonomy_level' }],
    });
    expect(answer.content).toBe(
      'Approval required before the agent runs Notes-wipe (risk: write_high_risk) (pause p). ' +
        `Approve: POST ${PAUSED.content.approval_url}; reject: POST ${PAUSED.content.rejection_url}.`,
    );
    expect(chatCompletion(head, answer).usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
  });

  it('a canceled turn: its message and reason', () => {
    const answer = statefulAnswer({ ...IDS, status: 'Canceled', content: { ...IDS, message: 'Tool excecution rejected.', reason: 'rejected' } });
    expect(answer).toEqual({ content: 'Tool excecution rejected.', metadata: { ...IDS, status: 'Canceled', reason: 'rejected' } });
  });
});

describe('stream chunks of a stateful request', () => {
  const event = (n: number, name: string, data: Record<string, unknown>): LoggedEvent => ({ id: `0-${n}`, n, event: name, data });
  const errorOf = (p: Record<string, unknown>) => ({ error: { message: String(p.detail), type: 'server_error', code: String(p.code), param: null } });
  const contents = (chunks: unknown[]) => chunks.map((c) => (c as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content);

  it('text deltas, then the finish with metadata, then usage (every chunk usage: null before it)', () => {
    const chunks = new CompletionChunks(headOf('r', 'N/1', 0), true);
    const mapper = new StatefulChunkMapper(chunks);
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    const out = [
      chunks.first(IDS),
      ...mapper.map(event(1, 'partial-response', { output_partial: 'Hi' }), errorOf),
      ...mapper.map(event(2, 'tool-call', { tool_call_id: 'c', name: 'x' }), errorOf),
      ...mapper.map(event(3, 'final-response', { ...IDS, status: 'Completed', content: { output: 'Hi', token_usage: usage } }), errorOf),
    ];
    expect(mapper.done).toBe(true);
    expect(contents(out)).toEqual(['', 'Hi', undefined, undefined]);
    expect(out[0]).toMatchObject({
      object: 'chat.completion.chunk',
      usage: null,
      metadata: IDS,
      choices: [{ delta: { role: 'assistant' }, finish_reason: null }],
    });
    expect(out[2]).toMatchObject({ choices: [{ delta: {}, finish_reason: 'stop' }], metadata: { ...IDS, status: 'Completed' } });
    expect(out[3]).toEqual({ id: 'chatcmpl-r', created: 0, model: 'N/1', object: 'chat.completion.chunk', choices: [], usage });
  });

  it('an answer that was not streamed comes whole; a pause after streamed text follows it', () => {
    const whole = new StatefulChunkMapper(new CompletionChunks(headOf('r', 'N/1', 0), false));
    expect(contents(whole.map(event(1, 'final-response', { ...IDS, status: 'Completed', content: { output: 'All.' } }), errorOf))).toEqual(['All.', undefined]);
    const paused = new StatefulChunkMapper(new CompletionChunks(headOf('r', 'N/1', 0), false));
    paused.map(event(1, 'partial-response', { output_partial: 'On it.' }), errorOf);
    const [pauseText] = contents(paused.map(event(2, 'final-response', PAUSED), errorOf));
    expect(pauseText).toMatch(/^\n\nApproval required before the agent runs Notes-wipe/);
  });

  it("an error event ends the stream with OpenAI's error body", () => {
    const mapper = new StatefulChunkMapper(new CompletionChunks(headOf('r', 'N/1', 0), false));
    expect(mapper.map(event(1, 'error', { code: 'LLM_TIMEOUT', detail: 'slow' }), errorOf)).toEqual([
      { error: { message: 'slow', type: 'server_error', code: 'LLM_TIMEOUT', param: null } },
    ]);
    expect(mapper.done).toBe(true);
  });
});

describe('openAiErrorOf', () => {
  const of = (err: DomainError) => openAiErrorOf(buildProblem(err.code, err.message, '/openai/v1/chat/completions', { errors: err.errors }), err);

  it.each([
    ['UNAUTHENTICATED', 'no token', 401, 'authentication_error'],
    ['FORBIDDEN', 'scope', 403, 'permission_error'],
    ['NOT_OWNER', 'not yours', 401, 'permission_error'],
    ['TASK_BUSY', 'busy', 409, 'invalid_request_error'],
    ['RATE_LIMITED', 'slow down', 429, 'rate_limit_error'],
    ['LLM_TIMEOUT', 'slow model', 504, 'server_error'],
  ])('%s (%s) → %i %s, our code', (code, message, status, type) => {
    expect(of(new DomainError(code as ErrorCode, message))).toEqual({ status, body: { error: { message, type, code, param: null } } });
  });

  it('a validation error is 400 (OpenAI BadRequestError) naming the first field; an unknown model 404 model_not_found', () => {
    const invalid = new DomainError(ErrorCode.VALIDATION_FAILED, 'bad', { errors: [{ field: 'messages.0.role', message: 'x' }] });
    expect(of(invalid)).toEqual({
      status: 400,
      body: { error: { message: 'bad', type: 'invalid_request_error', code: 'VALIDATION_FAILED', param: 'messages.0.role' } },
    });
    expect(of(modelNotFound('X/1'))).toEqual({
      status: 404,
      body: {
        error: {
          message: "The model 'X/1' does not exist or you do not have access to it.",
          type: 'invalid_request_error',
          code: 'model_not_found',
          param: 'model',
        },
      },
    });
  });

  it('a 500 keeps its error_id', () => {
    const problem = buildProblem(ErrorCode.INTERNAL, 'boom (error_id e1)', '/x', { errorId: 'e1' });
    expect(openAiErrorOf(problem).body.error).toMatchObject({ type: 'server_error', code: 'INTERNAL', error_id: 'e1' });
  });
});
