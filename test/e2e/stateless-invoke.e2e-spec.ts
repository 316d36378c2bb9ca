import { postJson } from '../support/http';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { CHAT_V1 as CHAT } from '../support/stateless-agents';
import { TestApp } from '../support/test-app';

/** v1 Chat, v1 Agent and v2alpha1 `POST /{name}/{version}` against an OpenAI-compatible provider. */

/** The stream tests' Chat agent, with sampling settings to see in the model request. */
const CHAT_V1 = `${CHAT}    temperature: 0\n    max_tokens: 256\n`;

const AGENT_V1_TEXT = `
apiVersion: skagents/v1
kind: Agent
description: A text-only v1 agent
service_name: TextBot
version: 0.1
input_type: BaseInput
spec:
  agent:
    name: default
    model: gpt-4o-mini
    system_prompt: Answer in one word.
`;

const AGENT_V2 = `
apiVersion: skagents/v2alpha1
kind: Agent
name: HelperV2
version: 2
metadata:
  description: A v2alpha1 agent
spec:
  agent:
    name: default
    model: gpt-4.1
`;

const HEX32 = /^[0-9a-f]{32}$/;
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

describe('stateless invoke against an OpenAI-compatible provider', () => {
  let fake: FakeOpenAi;
  let t: TestApp;
  let app: FakeModelApp;
  beforeAll(async () => {
    app = await startFakeModelApp({ agents: { 'chat.yaml': CHAT_V1, 'text.yaml': AGENT_V1_TEXT, 'v2.yaml': AGENT_V2 }, env: { TA_API_KEY: 'sk-invoke-test' } });
    ({ llm: fake, t } = app);
  });
  afterAll(() => app.close());
  const lastModelCall = () => fake.requests.at(-1)!;

  it('answers a v1 Chat invoke with exactly the InvokeResponse fields, usage from the provider', async () => {
    fake.script(reply.text('Sunny.', { usage: { prompt_tokens: 20, completion_tokens: 3 } }));
    const res = await postJson(`${t.url}/ChatBot/1.0`, { session_id: 'sess-42', chat_history: [{ role: 'user', content: 'weather?' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(res.body)).toEqual(['session_id', 'source', 'request_id', 'token_usage', 'extra_data', 'output_raw', 'output_pydantic']);
    expect(res.body).toEqual({
      session_id: 'sess-42',
      source: 'ChatBot:1.0',
      request_id: expect.stringMatching(HEX32),
      token_usage: { completion_tokens: 3, prompt_tokens: 20, total_tokens: 23 },
      extra_data: null,
      output_raw: 'Sunny.',
      output_pydantic: null,
    });
  });

  it('mints a 32-hex session id when none is given, and a new request id every time', async () => {
    fake.script(reply.text('a'), reply.text('b'));
    const one = await postJson(`${t.url}/ChatBot/1.0`, { chat_history: [{ role: 'user', content: 'x' }] });
    const two = await postJson(`${t.url}/ChatBot/1.0`, { chat_history: [{ role: 'user', content: 'y' }] });
    expect(one.body.session_id).toMatch(HEX32);
    expect(two.body.session_id).toMatch(HEX32);
    expect(one.body.session_id).not.toBe(two.body.session_id);
    expect(one.body.request_id).not.toBe(two.body.request_id);
  });

  it('sends the system prompt, then the user context in upstream text, then the history in order', async () => {
    fake.script(reply.text('ok'));
    const res = await postJson(`${t.url}/ChatBot/1.0`, {
      chat_history: [
        { role: 'user', items: [{ content_type: 'text', content: 'hi' }] },
        { role: 'assistant', content: 'hello' }, // the older {role, content} shape
        { role: 'user', content: 'weather?' },
      ],
      user_context: { 'User Location': 'Oslo', team: 'AI' },
    });
    expect(res.status).toBe(200);
    const body = lastModelCall().body;
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'The following user context was provided:\n  User Location: Oslo\n  team: AI\n' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      { role: 'user', content: 'weather?' },
    ]);
    expect(body).toMatchObject({ model: 'gpt-4o', temperature: 0, max_tokens: 256, stream: false });
    expect(lastModelCall().headers.authorization).toBe('Bearer sk-invoke-test');
  });

  it('passes image items to the model as image_url content parts', async () => {
    fake.script(reply.text('A pixel.'));
    const res = await postJson(`${t.url}/ChatBot/1.0`, {
      chat_history: [
        {
          role: 'user',
          items: [
            { content_type: 'text', content: 'What is this?' },
            { content_type: 'image', content: PNG },
          ],
        },
      ],
    });
    expect(res.status).toBe(200);
    expect(lastModelCall().body.messages.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: PNG } },
      ],
    });
  });

  it('refuses an image item for a BaseInput agent with 422 naming the field, without calling the model', async () => {
    const before = fake.requests.length;
    const res = await postJson(`${t.url}/TextBot/0.1`, {
      chat_history: [
        {
          role: 'user',
          items: [
            { content_type: 'text', content: 'look' },
            { content_type: 'image', content: PNG },
          ],
        },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toEqual([{ field: 'chat_history.0.items.1.content_type', message: expect.stringContaining('BaseInput') }]);
    expect(fake.requests.length).toBe(before);
  });

  it('leaves temperature and max_tokens out when the agent sets none (v1 Agent)', async () => {
    fake.script(reply.text('Yes.', { usage: { prompt_tokens: 4, completion_tokens: 1 } }));
    const res = await postJson(`${t.url}/TextBot/0.1`, { chat_history: [{ role: 'user', content: 'ok?' }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source: 'TextBot:0.1', output_raw: 'Yes.', token_usage: { completion_tokens: 1, prompt_tokens: 4, total_tokens: 5 } });
    const body = lastModelCall().body;
    expect(body.model).toBe('gpt-4o-mini');
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('max_tokens');
    expect(body.messages).toEqual([
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'ok?' },
    ]);
  });

  it('answers a v2alpha1 invoke, with no system message when the agent has no prompt and no user_context (BaseMultiModalInput has none)', async () => {
    fake.script(reply.text('Done.', { usage: { prompt_tokens: 7, completion_tokens: 2 } }));
    const res = await postJson(`${t.url}/HelperV2/2`, {
      session_id: 'v2-session',
      chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'do it' }] }],
      user_context: { tz: 'UTC' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session_id: 'v2-session',
      source: 'HelperV2:2',
      request_id: expect.stringMatching(HEX32),
      token_usage: { completion_tokens: 2, prompt_tokens: 7, total_tokens: 9 },
      extra_data: null,
      output_raw: 'Done.',
      output_pydantic: null,
    });
    expect(lastModelCall().body.messages).toEqual([{ role: 'user', content: 'do it' }]);
  });
});
