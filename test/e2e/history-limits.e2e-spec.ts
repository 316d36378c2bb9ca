import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { modelInput, text, v3Client } from '../support/v3-client';

const PLUGIN = `
exports.plugins = [{ name: 'Calc', tools: [
  { name: 'add', description: 'Adds a and b', risk: 'read_only',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    handler: ({ a, b }) => String(a + b) },
] }];
`;

const v3Agent = (name: string, history: string) => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: history limits
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Calc]
${history}
`;

const V2 = `
apiVersion: skagents/v2alpha1
name: LimitedV2
version: 1
metadata:
  description: stateless history limits
  skills: []
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Be brief.
    history:
      max_messages: 3
`;

const V1 = `
apiVersion: skagents/v1
kind: Chat
service_name: LimitedV1
version: 1
description: stateless v1 history limits
input_type: BaseInputWithUserContext
spec:
  agent:
    name: default
    model: gpt-test
    history: {max_tokens: 40}
`;

/** OpenAI's answer to an input over the context window. */
const CONTEXT_EXCEEDED = {
  error: {
    message:
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  },
};

const CTX = 'The following user context was provided:\n  name: Ada\n';
const add = (id: string) => ({ id, name: 'Calc-add', arguments: '{"a":2,"b":3}' });

describe('history limits (spec.agent.history) and the context-length retry', () => {
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({
      'limited.yaml': v3Agent('Limited', '    history:\n      max_messages: 5'),
      'open.yaml': v3Agent('Open', ''),
      'summarizing.yaml': v3Agent('Summarizing', '    history:\n      max_messages: 5\n      strategy: summarize'),
      'v2.yaml': V2,
      'v1.yaml': V1,
    });
    writeFileSync(join(dir, 'custom_plugins.js'), PLUGIN);
    t = await startTestApp({ configPath: dir, env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0' } });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  it('v3: leaves out the oldest whole turn, never a tool result without its call; shown per request (JSON and SSE)', async () => {
    const api = v3Client(`${t.url}/Limited/1`);
    llm.script(reply.toolCalls([add('call_1')]), reply.text('It is 5.'));
    const first = await api.say('add 2 and 3', { user_context: { name: 'Ada' } });
    expect(first.status).toBe(200);
    const task_id = first.body.task_id;
    llm.script(reply.text('Welcome.'));
    expect((await api.say('thanks', { task_id })).status).toBe(200);

    // History: [user, assistant(call), tool, assistant] [user, assistant] + the new question = 7 > 5.
    // The last 5 messages would start with the tool result; the whole first turn goes instead.
    llm.script(reply.text('Again 5.'));
    const sse = await openSse(`${t.url}/Limited/1/sse`, { items: [text('again?')], task_id });
    const events = parseSse(await sse.readAll());
    expect(events.some((e) => e.event === 'final-response')).toBe(true);
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', CTX],
      ['user', 'thanks'],
      ['assistant', 'Welcome.'],
      ['user', 'again?'],
    ]);

    const task = await api.task(task_id);
    const shown = task.body.requests.map((r: Record<string, unknown>) => [
      r.model_input_messages,
      r.history_truncated,
      r.history_omitted_messages,
      r.history_summarized,
    ]);
    expect(shown).toEqual([
      [3, false, 0, false],
      [7, false, 0, false],
      [5, true, 4, false],
    ]);
  });

  it("v3: retries once with the older half of the turns left out when the model answers 'context length exceeded'", async () => {
    const api = v3Client(`${t.url}/Open/1`);
    llm.script(reply.text('1'));
    const first = await api.say('one');
    const task_id = first.body.task_id;
    llm.script(reply.text('2'));
    await api.say('two', { task_id });

    llm.script(reply.error(400, { body: CONTEXT_EXCEEDED }), reply.text('3'));
    const third = await api.say('three', { task_id });
    expect(third.status).toBe(200);
    expect(third.body.content.output).toBe('3');
    const [refused, retried] = llm.requests.slice(-2).map((r) => modelInput(r.body));
    expect(refused).toEqual([
      ['system', 'Be brief.'],
      ['user', 'one'],
      ['assistant', '1'],
      ['user', 'two'],
      ['assistant', '2'],
      ['user', 'three'],
    ]);
    expect(retried).toEqual([
      ['system', 'Be brief.'],
      ['user', 'two'],
      ['assistant', '2'],
      ['user', 'three'],
    ]);

    const task = await api.task(task_id);
    expect(task.body.requests.map((r: { history_truncated: boolean }) => r.history_truncated)).toEqual([false, false, true]);
    expect(task.body.requests[2]).toMatchObject({ status: 'Completed', model_input_messages: 4, history_omitted_messages: 2 });

    // the same over /sse: the refusal comes before any text, the retry streams the answer
    llm.script(reply.error(400, { body: CONTEXT_EXCEEDED }), reply.chunks(['fo', 'ur']));
    const sse = await openSse(`${t.url}/Open/1/sse`, { items: [text('four')], task_id });
    const events = parseSse(await sse.readAll());
    expect(
      events
        .filter((e) => e.event === 'partial-response')
        .map((e) => JSON.parse(e.data).output_partial)
        .join(''),
    ).toBe('four');
    expect(events.filter((e) => e.event === 'error')).toEqual([]);
    // three earlier turns: the older two are left out
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', 'three'],
      ['assistant', '3'],
      ['user', 'four'],
    ]);
    const after = await api.task(task_id);
    expect(after.body.requests[3]).toMatchObject({ status: 'Completed', output: 'four', history_truncated: true, history_omitted_messages: 4 });
  });

  it('v3: with nothing left to leave out, the refusal is the answer (no retry)', async () => {
    const api = v3Client(`${t.url}/Open/1`);
    llm.script(reply.error(400, { body: CONTEXT_EXCEEDED }));
    const res = await api.say('x'.repeat(100));
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('LLM_REQUEST_REJECTED');
  });

  it('v3 strategy summarize: the left-out turns become one summary, written once, stored and reused until more turns fall out', async () => {
    const api = v3Client(`${t.url}/Summarizing/1`);
    llm.script(reply.text('1'));
    const first = await api.say('one');
    const task_id = first.body.task_id;
    // turn 2 is a tool round: 4 messages
    llm.script(reply.toolCalls([add('call_s')]), reply.text('2'));
    await api.say('two', { task_id });

    // 2 + 4 + 1 = 7 > 5: turn 1 falls out and is summarized (one model call), then the answer
    llm.script(reply.text('S1'), reply.text('3'));
    await api.say('three', { task_id });
    const [summary1, answer3] = llm.requests.slice(-2).map((r) => modelInput(r.body));
    expect(summary1).toHaveLength(2);
    expect(summary1![0]![0]).toBe('system');
    expect(summary1![1]![1]).toContain('user: one');
    expect(summary1![1]![1]).toContain('assistant: 1');
    expect(answer3![1]).toEqual(['user', expect.stringMatching(/S1$/)]);
    expect(answer3!.slice(2).map((m) => m[0])).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);

    // turn 2 falls out too: a new summary from the stored one and turn 2 only
    llm.script(reply.text('S2'), reply.text('4'));
    await api.say('four', { task_id });
    const [summary2, answer4] = llm.requests.slice(-2).map((r) => modelInput(r.body));
    expect(summary2![1]![1]).toContain('S1');
    expect(summary2![1]![1]).toContain('Calc-add');
    expect(summary2![1]![1]).not.toContain('user: one');
    expect(answer4).toEqual([
      ['system', 'Be brief.'],
      ['user', expect.stringMatching(/S2$/)],
      ['user', 'three'],
      ['assistant', '3'],
      ['user', 'four'],
    ]);

    // 2 + 2 + 1 = 5 fit after turn 2: the same turns are left out, the stored summary is reused (no model call)
    llm.script(reply.text('5'));
    const fifth = await api.say('five', { task_id });
    expect(fifth.body.content.output).toBe('5');
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', expect.stringMatching(/S2$/)],
      ['user', 'three'],
      ['assistant', '3'],
      ['user', 'four'],
      ['assistant', '4'],
      ['user', 'five'],
    ]);

    const task = await api.task(task_id);
    const shown = task.body.requests.map((r: Record<string, unknown>) => [r.history_summarized, r.history_truncated, r.history_omitted_messages]);
    expect(shown).toEqual([
      [false, false, 0],
      [false, false, 0],
      [true, false, 2],
      [true, false, 6],
      [true, false, 6],
    ]);
  });

  it('v2: the stateless chat_history is fitted the same way', async () => {
    llm.script(reply.text('ok'));
    const history = [
      { role: 'user', items: [text('u1')] },
      { role: 'assistant', items: [text('a1')] },
      { role: 'user', items: [text('u2')] },
      { role: 'assistant', items: [text('a2')] },
      { role: 'user', items: [text('u3')] },
    ];
    const res = await postJson(`${t.url}/LimitedV2/1`, { chat_history: history });
    expect(res.status).toBe(200);
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['system', 'Be brief.'],
      ['user', 'u2'],
      ['assistant', 'a2'],
      ['user', 'u3'],
    ]);
  });

  it('v1: max_tokens keeps the newest turns that fit', async () => {
    llm.script(reply.text('ok'));
    const long = 'x'.repeat(200); // about 54 tokens with its framing: over the limit of 40
    const res = await postJson(`${t.url}/LimitedV1/1`, {
      chat_history: [
        { role: 'user', content: long },
        { role: 'assistant', content: 'long answer' },
        { role: 'user', content: 'short' },
      ],
      user_context: { name: 'Ada' },
    });
    expect(res.status).toBe(200);
    expect(modelInput(llm.requests.at(-1)!.body)).toEqual([
      ['user', CTX],
      ['user', 'short'],
    ]);
  });
});
