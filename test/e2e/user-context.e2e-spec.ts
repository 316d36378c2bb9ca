import { join } from 'node:path';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { openSse } from '../support/sse-reader';
import { TestApp } from '../support/test-app';

/**
 * `user_context` follows the input type, as upstream's pydantic models make it: a type without
 * the field (BaseInput, BaseMultiModalInput, v2alpha1's fixed BaseMultiModalInput) ignores it,
 * even when it is malformed; the `*WithUserContext` types inject it as a user message.
 */

const FIXTURES = join(__dirname, '../fixtures/upstream-types/user-context');
const CONTEXT = { 'User Location': 'Oslo', team: 'AI' };
const CONTEXT_MESSAGE = { role: 'user', content: 'The following user context was provided:\n  User Location: Oslo\n  team: AI\n' };
const SYSTEM = { role: 'system', content: 'You are a helpful assistant.' };
const text = (content: string) => ({ role: 'user', items: [{ content_type: 'text', content }] });

describe('user_context follows the input type', () => {
  let app: FakeModelApp;
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    app = await startFakeModelApp({ configPath: FIXTURES });
    ({ llm, t } = app);
  });
  afterAll(() => app?.close());
  afterEach(() => expect(llm.pending()).toBe(0));

  const messagesFor = async (path: string, body: unknown) => {
    llm.script(reply.text('ok'));
    const res = await postJson(`${t.url}${path}`, body);
    expect(res.status).toBe(200);
    return llm.requests.at(-1)!.body.messages;
  };

  it.each([
    ['/TextContextChat/0.1', 'BaseInputWithUserContext'],
    ['/MultiContextChat/0.1', 'BaseMultiModalInputWithUserContext'],
  ])('%s (%s) injects it ahead of the history', async (path) => {
    expect(await messagesFor(path, { chat_history: [{ role: 'user', content: 'hi' }], user_context: CONTEXT })).toEqual([
      SYSTEM,
      CONTEXT_MESSAGE,
      { role: 'user', content: 'hi' },
    ]);
  });

  it.each([
    ['/TextChat/0.1', 'BaseInput'],
    ['/MultiChat/0.1', 'BaseMultiModalInput'],
    ['/HelperV2/0.1', 'skagents/v2alpha1 (BaseMultiModalInput)'],
  ])('%s (%s) drops it', async (path) => {
    expect(await messagesFor(path, { chat_history: [text('hi')], user_context: CONTEXT })).toEqual([SYSTEM, { role: 'user', content: 'hi' }]);
  });

  it('drops it on /sse too', async () => {
    llm.script(reply.chunks(['o', 'k']));
    const sse = await openSse(`${t.url}/HelperV2/0.1/sse`, { chat_history: [text('hi')], user_context: CONTEXT });
    expect(sse.status).toBe(200);
    await sse.readAll();
    expect(llm.requests.at(-1)!.body.messages).toEqual([SYSTEM, { role: 'user', content: 'hi' }]);
  });

  it('a type without the field ignores even a malformed user_context (200); a type with it refuses one (422)', async () => {
    expect(await messagesFor('/TextChat/0.1', { chat_history: [text('hi')], user_context: { lang: 1 } })).toEqual([SYSTEM, { role: 'user', content: 'hi' }]);
    const res = await postJson(`${t.url}/TextContextChat/0.1`, { chat_history: [text('hi')], user_context: { lang: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['user_context']);
  });

  it('a Sequential template reads user_context only when the input type has it', async () => {
    const body = { chat_history: [{ role: 'user', content: 'weather?' }], user_context: { city: 'Oslo' } };
    expect((await messagesFor('/TextPlanner/0.1', body)).at(-1)).toEqual({ role: 'user', content: 'Plan for []' });
    expect((await messagesFor('/ContextPlanner/0.1', body)).at(-1)).toEqual({ role: 'user', content: 'Plan for [Oslo]' });
  });
});
