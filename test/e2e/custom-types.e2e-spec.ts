import { join } from 'node:path';
import { ConfigError } from '../../src/agents/config/config-error';
import { loadEnvConfig } from '../../src/config/env.config';
import { createApp } from '../../src/app.factory';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { openSse } from '../support/sse-reader';
import { TestApp } from '../support/test-app';

/**
 * Upstream configs whose `input_type` / `output_type` name classes of a `custom_types.py` beside
 * them (test/fixtures/upstream-types): the input type validates the body, the output type makes the
 * model answer with strict structured output, parsed into `output_pydantic`.
 */

const FIXTURES = join(__dirname, '../fixtures/upstream-types');
const HEX32 = /^[0-9a-f]{32}$/;

const ADD_OUTPUT_FORMAT = {
  type: 'json_schema',
  json_schema: {
    name: 'AddOutput',
    strict: true,
    schema: { title: 'AddOutput', type: 'object', properties: { result: { type: 'integer' } }, required: ['result'], additionalProperties: false },
  },
};

describe('custom input and output types from custom_types.py', () => {
  let app: FakeModelApp;
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    app = await startFakeModelApp({ configPath: join(FIXTURES, 'agents') });
    ({ llm, t } = app);
  });
  afterAll(() => app?.close());
  afterEach(() => expect(llm.pending()).toBe(0));

  it('openapi.json names the input type as the request body and types output_pydantic by the output type (OpenAPI 3.0 schemas)', async () => {
    const res = await fetch(`${t.url}/PlanningAgent/0.1/openapi.json`);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON document read by path in the assertions below
    const doc = (await res.json()) as { paths: Record<string, any>; components: { schemas: Record<string, any> } };
    const invoke = doc.paths['/PlanningAgent/0.1'].post;
    expect(invoke.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/PlanningAgentInput' });
    expect(doc.paths['/PlanningAgent/0.1/sse'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/PlanningAgentInput',
    });
    const input = doc.components.schemas.PlanningAgentInput;
    expect(input.required).toEqual(expect.arrayContaining(['overall_goal', 'agent_list']));
    expect(input.properties.agent_list).toMatchObject({ type: 'array', items: { $ref: '#/components/schemas/Agent' } });
    expect(input.properties.max_steps).toMatchObject({ type: 'integer', default: 3 });
    expect(doc.components.schemas.Agent.properties).toMatchObject({ name: { type: 'string' }, description: { type: 'string' } });
    const response = invoke.responses['200'].content['application/json'].schema;
    expect(response).toEqual({ $ref: '#/components/schemas/InvokeResponsePlanningAgentOutput' });
    const typed = doc.components.schemas.InvokeResponsePlanningAgentOutput;
    expect(typed.allOf[0]).toEqual({ $ref: '#/components/schemas/InvokeResponse' });
    expect(typed.allOf[1].properties.output_pydantic).toEqual({ allOf: [{ $ref: '#/components/schemas/PlanningAgentOutput' }], nullable: true });
    expect(doc.components.schemas.PlanningAgentOutput.properties.reasoning).toMatchObject({ type: 'string', nullable: true });
    // nothing of JSON Schema 2020-12 that OpenAPI 3.0 does not know
    expect(JSON.stringify(doc)).not.toMatch(/"\$defs"|"type":"null"|"const":/);
  });

  describe('the input type validates the request body', () => {
    it('422 naming each invalid or missing field, and the model is not called', async () => {
      const before = llm.requests.length;
      const res = await postJson(`${t.url}/AdderAgent/0.1`, { number_1: 'two' });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', instance: '/AdderAgent/0.1' });
      expect(res.body.errors).toEqual([
        { field: 'number_1', message: 'Input should be a valid integer' },
        { field: 'number_2', message: 'Field required' },
      ]);
      expect(llm.requests.length).toBe(before);
    });

    it('names nested fields by path (a list of models of the file)', async () => {
      const res = await postJson(`${t.url}/PlanningAgent/0.1`, { overall_goal: 'g', agent_list: [{ name: 'Writer', description: 'Writes' }, { name: 3 }] });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([
        { field: 'agent_list.1.name', message: 'Input should be a valid string' },
        { field: 'agent_list.1.description', message: 'Field required' },
      ]);
    });

    it('422 on /sse too, before the stream opens', async () => {
      const res = await postJson(`${t.url}/AdderAgent/0.1/sse`, { number_1: 1 });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ field: 'number_2', message: 'Field required' }]);
    });
  });

  describe('the output type makes the model answer with structured output', () => {
    it('sends response_format json_schema (strict); output_pydantic is the parsed object and output_raw the text', async () => {
      llm.script(reply.text('{"result": 5}', { usage: { prompt_tokens: 30, completion_tokens: 5 } }));
      const res = await postJson(`${t.url}/AdderAgent/0.1`, { number_1: '2', number_2: 3, ignored: true });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        session_id: expect.stringMatching(HEX32),
        source: 'AdderAgent:0.1',
        request_id: expect.stringMatching(HEX32),
        token_usage: { completion_tokens: 5, prompt_tokens: 30, total_tokens: 35 },
        extra_data: null,
        output_raw: '{"result": 5}',
        output_pydantic: { result: 5 },
      });
      const sent = llm.requests.at(-1)!.body;
      expect(sent.response_format).toEqual(ADD_OUTPUT_FORMAT);
      // The template read the validated input: "2" became the integer 2.
      expect(sent.messages).toEqual([
        { role: 'system', content: 'You are a helpful assistant.\n' },
        { role: 'user', content: 'Add the following two numbers together 2 3\n' },
      ]);
    });

    it('nested models, Optional fields and docstrings: the schema is strict all the way down, defaults are filled in', async () => {
      const plan = {
        can_succeed: true,
        steps: [{ step_number: 1, step_tasks: [{ task_id: 't1', prerequisite_tasks: [], task_goal: 'Write', task_agent: 'Writer' }] }],
      };
      llm.script(reply.text(JSON.stringify(plan)));
      const res = await postJson(`${t.url}/PlanningAgent/0.1`, {
        overall_goal: 'Publish a post',
        agent_list: [
          { name: 'Writer', description: 'Writes drafts' },
          { name: 'Editor', description: 'Edits drafts' },
        ],
      });
      expect(res.status).toBe(200);
      // reasoning was not given: its default (None) is filled in, as pydantic does.
      expect(res.body.output_pydantic).toEqual({ ...plan, reasoning: null });
      const sent = llm.requests.at(-1)!.body;
      const prompt = sent.messages.at(-1).content as string;
      // A folded (>) YAML block: lines join with spaces, as upstream's template sees them.
      expect(prompt).toContain('Agent: Writer Agent Description: Writes drafts');
      expect(prompt).toContain('Agent: Editor Agent Description: Edits drafts');
      expect(prompt).toContain('Use at most 3 steps.');
      const format = sent.response_format.json_schema;
      expect(format).toMatchObject({ name: 'PlanningAgentOutput', strict: true, description: 'A plan, or the reason there is none' });
      expect(format.schema.required).toEqual(['can_succeed', 'reasoning', 'steps']);
      expect(format.schema.additionalProperties).toBe(false);
      expect(format.schema.$defs.Step).toMatchObject({ required: ['step_number', 'step_tasks'], additionalProperties: false });
      expect(format.schema.$defs.Task).toMatchObject({ additionalProperties: false });
      expect(JSON.stringify(format.schema)).not.toContain('"default"');
    });

    it('an answer that does not validate gets one repair turn carrying the errors; the repaired answer is used', async () => {
      llm.script(
        reply.text('{"result": "five"}', { usage: { prompt_tokens: 30, completion_tokens: 6 } }),
        reply.text('{"result": 5}', { usage: { prompt_tokens: 50, completion_tokens: 5 } }),
      );
      const first = llm.requests.length;
      const res = await postJson(`${t.url}/AdderAgent/0.1`, { number_1: 2, number_2: 3 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        output_raw: '{"result": 5}',
        output_pydantic: { result: 5 },
        token_usage: { completion_tokens: 11, prompt_tokens: 80, total_tokens: 91 },
      });
      expect(llm.requests.length).toBe(first + 2);
      const repair = llm.requests.at(-1)!.body;
      expect(repair.response_format).toEqual(ADD_OUTPUT_FORMAT);
      expect(repair.messages.slice(-2)).toEqual([
        { role: 'assistant', content: '{"result": "five"}' },
        {
          role: 'user',
          content:
            'Your answer does not match the required JSON schema AddOutput:\n- result: Input should be a valid integer\nAnswer again with only one JSON object that matches the schema.',
        },
      ]);
    });

    it('a second invalid answer is 502 LLM_OUTPUT_INVALID with the validation errors, after exactly one repair', async () => {
      llm.script(reply.text('The answer is 5.'), reply.text('{"total": 5}'));
      const first = llm.requests.length;
      const res = await postJson(`${t.url}/AdderAgent/0.1`, { number_1: 2, number_2: 3 });
      expect(res.status).toBe(502);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 502, code: 'LLM_OUTPUT_INVALID', instance: '/AdderAgent/0.1' });
      expect(res.body.errors).toEqual([{ field: 'result', message: 'Field required' }]);
      expect(res.body.detail).toContain('AddOutput');
      expect(llm.requests.length).toBe(first + 2);
      expect(llm.requests.at(-1)!.body.messages.at(-1).content).toContain('(the whole answer): the answer is not JSON');
    });

    it('over /sse: the first attempt streams as partial-response, the final-response carries output_pydantic', async () => {
      llm.script(reply.chunks(['{"result"', ': 7}'], { usage: { prompt_tokens: 3, completion_tokens: 2 } }));
      const sse = await openSse(`${t.url}/AdderAgent/0.1/sse`, { number_1: 3, number_2: 4 });
      expect(sse.status).toBe(200);
      const text = await sse.readAll();
      const frames = text
        .split('\n\n')
        .filter(Boolean)
        .map((f) => ({ event: /^event: (.*)$/m.exec(f)![1], data: JSON.parse(/^data: (.*)$/m.exec(f)![1]!) }));
      expect(frames.map((f) => f.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
      expect(frames.at(-1)!.data).toMatchObject({ output_raw: '{"result": 7}', output_pydantic: { result: 7 } });
      expect(llm.requests.at(-1)!.body).toMatchObject({ stream: true, response_format: ADD_OUTPUT_FORMAT });
    });

    it('kind: Agent with a custom input type derived from BaseInputWithUserContext: history and user_context reach the model', async () => {
      llm.script(reply.text('{"category": "billing", "summary": "Charged twice."}'));
      const res = await postJson(`${t.url}/SupportTriage/1.0`, {
        chat_history: [{ role: 'user', content: 'I was charged twice' }],
        user_context: { plan: 'Pro' },
        priority: 'high',
      });
      expect(res.status).toBe(200);
      expect(res.body.output_pydantic).toEqual({ category: 'billing', summary: 'Charged twice.' });
      const sent = llm.requests.at(-1)!.body;
      expect(sent.messages).toEqual([
        { role: 'system', content: 'Classify the request.' },
        { role: 'user', content: 'The following user context was provided:\n  plan: Pro\n' },
        { role: 'user', content: 'I was charged twice' },
      ]);
      expect(sent.response_format.json_schema.schema.properties.category).toEqual({ enum: ['billing', 'technical', 'other'], type: 'string' });
      const bad = await postJson(`${t.url}/SupportTriage/1.0`, { priority: 'urgent' });
      expect(bad.status).toBe(422);
      expect(bad.body.errors).toEqual([{ field: 'priority', message: "Input should be 'low', 'normal' or 'high'" }]);
    });

    it('skagents/v2alpha1 honours output_type too', async () => {
      llm.script(reply.text('{"category": "technical", "summary": "Login fails."}'));
      const res = await postJson(`${t.url}/TriageV2/0.1`, { chat_history: [{ role: 'user', content: 'cannot log in' }] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        output_raw: '{"category": "technical", "summary": "Login fails."}',
        output_pydantic: { category: 'technical', summary: 'Login fails.' },
      });
      expect(llm.requests.at(-1)!.body.response_format.json_schema.name).toBe('Triage');
    });

    it('tealagents/v1alpha1 ignores output_type, as upstream: no response_format, plain text output', async () => {
      llm.script(reply.text('Billing.'));
      const res = await postJson(`${t.url}/StatefulTriage/0.1`, { items: [{ content_type: 'text', content: 'charged twice' }] });
      expect(res.status).toBe(200);
      expect(res.body.content.output).toBe('Billing.');
      expect(llm.requests.at(-1)!.body).not.toHaveProperty('response_format');
    });

    it('the offline model local/echo answers in the shape of the output type', async () => {
      const res = await postJson(`${t.url}/OfflineAdder/0.1`, { number_1: 2, number_2: 3 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ output_raw: '{"result":0}', output_pydantic: { result: 0 } });
    });
  });
});

describe('custom types from custom_types.ts (zod schemas, a JSON Schema)', () => {
  let app: FakeModelApp;
  beforeAll(async () => {
    app = await startFakeModelApp({ configPath: join(FIXTURES, 'ts-module') });
  });
  afterAll(() => app?.close());

  it('a zod input type validates the body (defaults filled in) and a zod output type is asked for and parsed', async () => {
    const bad = await postJson(`${app.t.url}/TsAdder/0.1`, { number_1: 1.5, number_2: 2 });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([{ field: 'number_1', message: 'Invalid input: expected int, received number' }]);

    app.llm.script(reply.text('{"result": 3}'));
    const res = await postJson(`${app.t.url}/TsAdder/0.1`, { number_1: 1, number_2: 2 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ output_raw: '{"result": 3}', output_pydantic: { result: 3 } });
    const sent = app.llm.requests.at(-1)!.body;
    expect(sent.messages.at(-1)).toEqual({ role: 'user', content: 'Add 1 and 2 (sum)' });
    expect(sent.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'AddOutput',
        description: 'The answer',
        strict: true,
        schema: {
          type: 'object',
          description: 'The answer',
          properties: { result: { type: 'integer', description: 'The sum', minimum: -9007199254740991, maximum: 9007199254740991 } },
          required: ['result'],
          additionalProperties: false,
        },
      },
    });
  });

  it('a JSON Schema output type on kind: Chat', async () => {
    app.llm.script(reply.text('{"text": "hi"}'));
    const res = await postJson(`${app.t.url}/TsEcho/0.1`, { chat_history: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    expect(res.body.output_pydantic).toEqual({ text: 'hi' });
  });
});

describe('a custom_types.py that cannot be read without running Python stops the boot', () => {
  it('names the file, the line and the construct of every problem', async () => {
    const dir = join(FIXTURES, 'broken');
    const env = loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'silent' });
    const error = await createApp({ env, configPath: dir }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    const file = join(dir, 'custom_types.py');
    expect((error as ConfigError).problems).toEqual([
      `${file}:8: class EventInput: model settings (model_config = ...) are not supported`,
      `${file}:10: class EventInput, field "title": Field(min_length=...) is not supported (supported: default, default_factory, description, title, examples)`,
      `${file}:11: class EventInput, field "starts_at": the type "datetime" (imported from datetime) is not supported (supported: str, int, float, bool, None, Any, list[...], dict[str, ...], Optional[...], Union[...], X | Y, Literal[...], and models or Enums of this file or of sk_agents.ska_types)`,
      `${file}:13: class EventInput: "@field_validator("title")" is not supported: decorators (validators, computed fields) cannot be read without running Python`,
    ]);
  });
});

describe("two upstream agents' custom_types.py merged into one (both define class Agent)", () => {
  const dir = join(FIXTURES, 'merged');
  const file = join(dir, 'custom_types.py');
  let app: FakeModelApp;
  beforeAll(async () => {
    app = await startFakeModelApp({ configPath: dir });
  });
  afterAll(() => app?.close());
  afterEach(() => expect(app.llm.pending()).toBe(0));

  it('boots, as Python imports the file, with one warning naming both definitions (file:line of each)', () => {
    const warnings = app.t.logs().filter((l) => l.level === 'warn' && String(l.msg).includes('class Agent'));
    expect(warnings.map((l) => l.msg)).toEqual([`${file}:46: class Agent is defined again (first at ${file}:8): the later definition is used, as in Python`]);
  });

  it("serves the agent selector (input type defined before the redefinition) and the general agent (after it), each validating Agent's fields", async () => {
    const agents = [
      { name: 'WeatherAgent', description: 'Answers weather questions' },
      { name: 'GeneralAgent', description: 'Anything else' },
    ];
    app.llm.script(reply.text('{"agent_name": "WeatherAgent", "confidence": "High", "is_followup": false}'));
    const selected = await postJson(`${app.t.url}/AgentSelectorAgent/0.1`, {
      conversation_history: { history: [{ content: 'hi', recipient: 'GeneralAgent' }] },
      agent_list: agents,
      current_message: 'Will it rain in Oslo?',
    });
    expect(selected.status).toBe(200);
    expect(app.llm.requests.at(-1)!.body.messages.at(-1).content).toContain('WeatherAgent');

    app.llm.script(reply.text('I can help with the weather.'));
    const general = await postJson(`${app.t.url}/GeneralAgent/0.1`, { chat_history: [{ role: 'user', content: 'hello' }], agents });
    expect(general.status).toBe(200);
    expect(general.body.output_raw).toBe('I can help with the weather.');

    for (const [path, body] of [
      ['AgentSelectorAgent/0.1', { conversation_history: { history: [] }, agent_list: [{ name: 'WeatherAgent' }], current_message: 'x' }],
      ['GeneralAgent/0.1', { agents: [{ name: 'WeatherAgent' }] }],
    ] as const) {
      const bad = await postJson(`${app.t.url}/${path}`, body);
      expect(bad.status).toBe(422);
      expect(bad.body.errors).toEqual([{ field: `${path.startsWith('Agent') ? 'agent_list' : 'agents'}.0.description`, message: 'Field required' }]);
    }
  });
});
