/**
 * `extra_data` in answers (upstream's ExtraData, `{items: [{key, value}]}`): what the request's
 * tools added, in call order, `null` when none. A TypeScript plugin adds items with `ctx.extraData`
 * (a Python plugin with its extra_data_collector: python-plugins.e2e-spec.ts). On v3 the items are
 * stored with the request's tool calls, so an answer read back from the store (a repeated
 * Idempotency-Key) has them too; on the stateless v1 route the items of every task's tools are in
 * the one answer.
 */
import { reply } from '../support/fake-openai.server';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { postJson } from '../support/http';
import { writeAgentDir } from '../support/test-app';
import { v3Agent } from '../support/v3-agents';
import { v3Client } from '../support/v3-client';

const CONTEXT_PLUGIN = `
const city = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
exports.plugins = [{ name: 'Context', tools: [
  { name: 'remember', description: 'Remembers the city', parameters: city, risk: 'read_only',
    handler: ({ city }, ctx) => { ctx.extraData('set-context', 'User Location:' + city); ctx.extraData('audit', 'asked ' + city); return 'noted ' + city; } },
  { name: 'fail', description: 'Adds an item, then fails', parameters: city, risk: 'read_only',
    handler: ({ city }, ctx) => { ctx.extraData('lost', city); throw new Error('no such city'); } },
] }];
`;

const V1_CHAT = `apiVersion: skagents/v1
kind: Chat
description: A stateless chat agent
service_name: ContextBot
version: 0.1
input_type: BaseMultiModalInput
spec:
  agent:
    name: default
    role: Default Agent
    model: gpt-test
    system_prompt: Be brief.
    plugins: [Context]
`;

const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

describe('extra_data in answers', () => {
  let f: FakeModelApp;
  beforeAll(async () => {
    const dir = writeAgentDir({ 'v3.yaml': v3Agent('Ctx', { plugins: ['Context'] }), 'v1.yaml': V1_CHAT, 'custom_plugins.js': CONTEXT_PLUGIN });
    f = await startFakeModelApp({ configPath: dir });
  });
  afterAll(() => f?.close());

  it('v3: the items of the turn’s tool calls in call order (none from a call that failed); a repeat read from the store has them too', async () => {
    const api = v3Client(`${f.t.url}/Ctx/1`);
    f.llm.script(
      reply.toolCalls([tc('a', 'Context-remember', { city: 'Oslo' }), tc('b', 'Context-fail', { city: 'Nowhere' })]),
      reply.toolCalls([tc('c', 'Context-remember', { city: 'Bergen' })]),
      reply.text('Noted.'),
    );
    const headers = { 'Idempotency-Key': 'extra-data-1' };
    const first = await postJson(`${f.t.url}/Ctx/1`, { items: [{ content_type: 'text', content: 'remember' }] }, headers);
    const items = [
      { key: 'set-context', value: 'User Location:Oslo' },
      { key: 'audit', value: 'asked Oslo' },
      { key: 'set-context', value: 'User Location:Bergen' },
      { key: 'audit', value: 'asked Bergen' },
    ];
    expect(first.body).toMatchObject({ status: 'Completed', content: { output: 'Noted.', extra_data: { items } } });
    const repeat = await postJson(`${f.t.url}/Ctx/1`, { items: [{ content_type: 'text', content: 'remember' }] }, headers);
    expect(repeat.body.content.extra_data).toEqual({ items });
    // GET of the task: the stored tool calls keep what each added (none on the call that failed).
    const task = await api.task(first.body.task_id);
    const calls = (task.body.requests as { tool_calls: { id: string; outcome: string; extra_data?: unknown }[] }[])[0]!.tool_calls;
    expect(calls.map((c) => [c.id, c.outcome, c.extra_data])).toEqual([
      ['a', 'ok', items.slice(0, 2)],
      ['b', 'error', undefined],
      ['c', 'ok', items.slice(2)],
    ]);

    f.llm.script(reply.text('Nothing to do.'));
    const plain = await api.say('hi', { task_id: first.body.task_id });
    expect(plain.body).toMatchObject({ status: 'Completed', content: { extra_data: null } });
  });

  it('stateless v1: the answer carries the items; null without tool calls', async () => {
    const body = { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'remember Lisbon' }] }] };
    f.llm.script(reply.toolCalls([tc('a', 'Context-remember', { city: 'Lisbon' })]), reply.text('Noted.'));
    const res = await postJson(`${f.t.url}/ContextBot/0.1`, body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      output_raw: 'Noted.',
      extra_data: {
        items: [
          { key: 'set-context', value: 'User Location:Lisbon' },
          { key: 'audit', value: 'asked Lisbon' },
        ],
      },
    });
    f.llm.script(reply.text('Hello.'));
    expect((await postJson(`${f.t.url}/ContextBot/0.1`, body)).body).toMatchObject({ output_raw: 'Hello.', extra_data: null });
  });
});
