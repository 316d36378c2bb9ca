/**
 * Compatibility suite, v1 and v2 half: the real server (createApp, real HTTP) serves agents written
 * in upstream's YAML (test/fixtures/upstream-compat/v1v2, after upstream's demos) and every
 * response is checked field by field against the shapes of upstream's pydantic models and SSE code
 * (teal-agents src/sk-agents/src/sk_agents), written out below: key sets and their order (pydantic
 * serializes every declared field, in declaration order, None included), types, enum values, SSE
 * event names and frames. Request bodies are shaped like upstream's demo requests. Only the model
 * vendor is fake.
 */
import { join } from 'node:path';
import { FakeModelApp, startFakeModelApp } from '../support/fake-model-app';
import { FakeOpenAi, FakeUsage, reply } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { openSse } from '../support/sse-reader';
import { TestApp } from '../support/test-app';

// ---------------------------------------------------------------------------------------------
// Upstream's models, as declared (python type → JSON): str, int, float, bool, Any, X | None, list,
// dict, Enum. A model serializes every field, in order.
// ---------------------------------------------------------------------------------------------

type Shape =
  | { t: 'str' | 'int' | 'float' | 'bool' | 'any' | 'none' }
  | { t: 'optional'; of: Shape }
  | { t: 'list'; of: Shape }
  | { t: 'dict'; of: Shape }
  | { t: 'enum'; values: readonly string[] }
  | { t: 'model'; name: string; fields: [string, Shape][] };

const str: Shape = { t: 'str' };
const int: Shape = { t: 'int' };
const float: Shape = { t: 'float' };
const bool: Shape = { t: 'bool' };
const any: Shape = { t: 'any' };
const none: Shape = { t: 'none' };
const optional = (of: Shape): Shape => ({ t: 'optional', of });
const list = (of: Shape): Shape => ({ t: 'list', of });
const dict = (of: Shape): Shape => ({ t: 'dict', of });
const model = (name: string, fields: [string, Shape][]): Shape => ({ t: 'model', name, fields });

/** ska_types.SseEventType */
const SSE_EVENT_TYPES = ['intermediate-task-response', 'partial-response', 'final-response', 'unknown'] as const;

/** ska_types.TokenUsage */
const TokenUsage = model('TokenUsage', [
  ['completion_tokens', int],
  ['prompt_tokens', int],
  ['total_tokens', int],
]);
/** extra_data_collector.ExtraData */
const ExtraData = model('ExtraData', [
  [
    'items',
    list(
      model('ExtraDataElement', [
        ['key', str],
        ['value', str],
      ]),
    ),
  ],
]);
/** ska_types.InvokeResponse[T] (v1: T = Any without output_type; v2: T = NoneType) */
const InvokeResponse = (t: Shape) =>
  model('InvokeResponse', [
    ['session_id', optional(str)],
    ['source', optional(str)],
    ['request_id', optional(str)],
    ['token_usage', TokenUsage],
    ['extra_data', optional(ExtraData)],
    ['output_raw', optional(str)],
    ['output_pydantic', optional(t)],
  ]);
/** ska_types.PartialResponse */
const PartialResponse = model('PartialResponse', [
  ['session_id', optional(str)],
  ['source', optional(str)],
  ['request_id', optional(str)],
  ['output_partial', str],
]);
/** ska_types.IntermediateTaskResponse (its response is a bare InvokeResponse: T = Any) */
const IntermediateTaskResponse = model('IntermediateTaskResponse', [
  ['task_no', int],
  ['task_name', str],
  ['response', InvokeResponse(any)],
]);
/** utility_routes.HealthStatus and LivenessStatus (v1 and v3 only; v2 has no health routes) */
const HealthStatus = model('HealthStatus', [
  ['status', str],
  ['timestamp', str],
  ['version', optional(str)],
  ['uptime', optional(float)],
  ['dependencies', optional(dict(any))],
]);
const LivenessStatus = model('LivenessStatus', [
  ['alive', bool],
  ['timestamp', str],
]);

/** Every way `value` departs from `shape`, one line each (empty: it conforms). */
function departures(value: unknown, shape: Shape, at = '$'): string[] {
  const got = () => `${at}: expected ${typeName(shape)}, got ${JSON.stringify(value)}`;
  switch (shape.t) {
    case 'any':
      return [];
    case 'none':
      return value === null ? [] : [got()];
    case 'str':
      return typeof value === 'string' ? [] : [got()];
    case 'int':
      return Number.isInteger(value) ? [] : [got()];
    case 'float':
      return typeof value === 'number' && Number.isFinite(value) ? [] : [got()];
    case 'bool':
      return typeof value === 'boolean' ? [] : [got()];
    case 'enum':
      return shape.values.includes(value as string) ? [] : [got()];
    case 'optional':
      return value === null ? [] : departures(value, shape.of, at);
    case 'list':
      return Array.isArray(value) ? value.flatMap((v, i) => departures(v, shape.of, `${at}[${i}]`)) : [got()];
    case 'dict':
      return isObject(value) ? Object.entries(value).flatMap(([k, v]) => departures(v, shape.of, `${at}.${k}`)) : [got()];
    case 'model': {
      if (!isObject(value)) return [got()];
      const expected = shape.fields.map(([k]) => k);
      const keys = Object.keys(value);
      const out: string[] = [];
      if (keys.join() !== expected.join()) out.push(`${at}: ${shape.name} keys are [${expected.join(', ')}], got [${keys.join(', ')}]`);
      for (const [k, s] of shape.fields) if (k in value) out.push(...departures(value[k], s, `${at}.${k}`));
      return out;
    }
  }
}

function typeName(shape: Shape): string {
  switch (shape.t) {
    case 'optional':
      return `${typeName(shape.of)} | None`;
    case 'list':
      return `list[${typeName(shape.of)}]`;
    case 'dict':
      return `dict[str, ${typeName(shape.of)}]`;
    case 'enum':
      return shape.values.join(' | ');
    case 'model':
      return shape.name;
    default:
      return shape.t;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The data model of each SSE event name (utils.get_sse_event_for_response). */
const EVENT_MODEL = (v2: boolean): Record<string, Shape> => ({
  'intermediate-task-response': IntermediateTaskResponse,
  'partial-response': PartialResponse,
  'final-response': InvokeResponse(v2 ? none : any),
});

/**
 * Upstream's frame, exactly: `event: {name}\ndata: {model_dump_json()}\n\n`, one data line (the JSON
 * has no newline), no `id:`, no `retry:`, no comment, nothing after the last frame.
 */
const FRAME = /event: ([^\n]*)\ndata: ([^\n]*)\n\n/y;

function framesOf(text: string): { event: string; data: unknown }[] {
  const frames: { event: string; data: unknown }[] = [];
  let at = 0;
  for (let m: RegExpExecArray | null; at < text.length && ((FRAME.lastIndex = at), (m = FRAME.exec(text))); at = FRAME.lastIndex) {
    frames.push({ event: m[1]!, data: JSON.parse(m[2]!) });
  }
  if (at < text.length || !frames.length) throw new Error(`not upstream SSE framing from offset ${at}:\n${JSON.stringify(text.slice(at))}`);
  return frames;
}

// ---------------------------------------------------------------------------------------------
// Requests shaped like upstream's demo requests (docs/demos/*/request_payload*.json, READMEs)
// ---------------------------------------------------------------------------------------------

const JPEG = 'data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDA==';
/** 08_multi_modal/request_payload.json */
const MULTIMODAL_REQUEST = {
  chat_history: [
    {
      role: 'user',
      items: [
        { content_type: 'text', content: 'How many buttons are in this image?' },
        { content_type: 'image', content: JPEG },
      ],
    },
  ],
};
/** 12_test_multimodal/request_payload_text_only.json */
const USER_CONTEXT_REQUEST = {
  session_id: 'test-session-123',
  chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'What is my favorite color? Please use my preferences when answering.' }] }],
  user_context: { user_favorite_color: 'blue', 'User Location': 'San Francisco, CA', 'Preferred Language': 'English' },
};
/** BaseInput / BaseInputWithUserContext: HistoryMessage {role, content} */
const TEXT_REQUEST = {
  chat_history: [
    { role: 'user', content: 'Hi, I need help planning my day.' },
    { role: 'assistant', content: 'Sure, where are you?' },
    { role: 'user', content: 'I am in Oslo.' },
  ],
};
const TEXT_CONTEXT_REQUEST = { ...TEXT_REQUEST, user_context: { 'User Location': 'Oslo' } };

const HEX32 = /^[0-9a-f]{32}$/;
const u = (prompt_tokens: number, completion_tokens: number): FakeUsage => ({ prompt_tokens, completion_tokens });
const sum = (...us: FakeUsage[]) => {
  const completion_tokens = us.reduce((n, x) => n + x.completion_tokens, 0);
  const prompt_tokens = us.reduce((n, x) => n + x.prompt_tokens, 0);
  return { completion_tokens, prompt_tokens, total_tokens: completion_tokens + prompt_tokens };
};

describe('upstream compatibility: v1 (Chat, Sequential) and v2 response shapes', () => {
  let app: FakeModelApp;
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    app = await startFakeModelApp({ configPath: join(__dirname, '../fixtures/upstream-compat/v1v2') });
    ({ llm, t } = app);
  });
  afterAll(() => app?.close());
  afterEach(() => expect(llm.pending()).toBe(0));

  /** POST `{prefix}` and check the InvokeResponse; returns it. */
  async function invokeJson(prefix: string, body: unknown, v2 = false) {
    const res = await postJson(`${t.url}${prefix}`, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json\b/);
    expect(departures(res.body, InvokeResponse(v2 ? none : any))).toEqual([]);
    return res.body;
  }

  /** POST `{prefix}/sse` and check the framing and every event's model; returns the frames. */
  async function invokeSse(prefix: string, body: unknown, v2 = false) {
    const sse = await openSse(`${t.url}${prefix}/sse`, body);
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toBe('text/event-stream; charset=utf-8'); // Starlette's StreamingResponse
    const frames = framesOf(await sse.readAll());
    const models = EVENT_MODEL(v2);
    for (const [i, f] of frames.entries()) {
      expect(departures(f.event, { t: 'enum', values: SSE_EVENT_TYPES })).toEqual([]);
      expect(f.event).not.toBe('unknown');
      expect(departures(f.data, models[f.event]!, `frames[${i}] ${f.event}`)).toEqual([]);
    }
    expect(frames.at(-1)!.event).toBe('final-response');
    expect(frames.filter((f) => f.event === 'final-response')).toHaveLength(1);
    return frames;
  }

  /** What every event of one stream shares (ChatAgents / SequentialSkagents set them once per call). */
  function expectOneCall(frames: { event: string; data: unknown }[], source: string, sessionId?: string) {
    const heads = frames.map((f) => (f.event === 'intermediate-task-response' ? (f.data as { response: object }).response : f.data) as Record<string, unknown>);
    const { session_id, request_id } = heads[0]!;
    expect(request_id).toMatch(HEX32);
    if (sessionId) expect(session_id).toBe(sessionId);
    else expect(session_id).toMatch(HEX32);
    for (const h of heads) expect({ session_id: h.session_id, source: h.source, request_id: h.request_id }).toEqual({ session_id, source, request_id });
  }

  it('the checker itself catches a missing, an extra or a reordered key, a wrong type and a bad enum value', () => {
    const ok = { session_id: null, source: 'A:1', request_id: 'r', output_partial: 'x' };
    expect(departures(ok, PartialResponse)).toEqual([]);
    expect(departures({ ...ok, extra: 1 }, PartialResponse)).toHaveLength(1);
    expect(departures({ source: 'A:1', session_id: null, request_id: 'r', output_partial: 'x' }, PartialResponse)).toHaveLength(1);
    const { output_partial: _, ...missing } = ok;
    expect(departures(missing, PartialResponse)).toHaveLength(1);
    expect(departures({ ...ok, output_partial: null }, PartialResponse)).toEqual(['$.output_partial: expected str, got null']);
    expect(departures({ completion_tokens: 1.5, prompt_tokens: 1, total_tokens: '2' }, TokenUsage)).toHaveLength(2);
    expect(departures('done', { t: 'enum', values: SSE_EVENT_TYPES })).toHaveLength(1);
    expect(() => framesOf('event: final-response\ndata: {}\nid: 1\n\n')).toThrow(/not upstream SSE framing/);
    expect(() => framesOf(': keepalive\n\nevent: final-response\ndata: {}\n\n')).toThrow(/not upstream SSE framing/);
  });

  describe('skagents/v1 kind: Chat', () => {
    it('BaseMultiModalInput (09_chat_simple, 08 payload with an image): JSON InvokeResponse', async () => {
      llm.script(reply.text('There are 7 buttons.', { usage: u(120, 6) }));
      const body = await invokeJson('/ChatBot/0.1', MULTIMODAL_REQUEST);
      expect(body).toEqual({
        session_id: expect.stringMatching(HEX32), // none given: uuid4().hex
        source: 'ChatBot:0.1',
        request_id: expect.stringMatching(HEX32),
        token_usage: sum(u(120, 6)),
        extra_data: null,
        output_raw: 'There are 7 buttons.',
        output_pydantic: null,
      });
      expect(body.session_id).not.toBe(body.request_id);
    });

    it('BaseMultiModalInput: SSE partial-response per chunk, then final-response; output_raw is the chunks joined', async () => {
      llm.script(reply.chunks(['There are ', '7 ', 'buttons.'], { usage: u(120, 6) }));
      const frames = await invokeSse('/ChatBot/0.1', MULTIMODAL_REQUEST);
      expectOneCall(frames, 'ChatBot:0.1');
      expect(frames.map((f) => f.event)).toEqual(['partial-response', 'partial-response', 'partial-response', 'final-response']);
      expect(frames.slice(0, -1).map((f) => (f.data as { output_partial: string }).output_partial)).toEqual(['There are ', '7 ', 'buttons.']);
      expect(frames.at(-1)!.data).toMatchObject({ token_usage: sum(u(120, 6)), extra_data: null, output_raw: 'There are 7 buttons.', output_pydantic: null });
    });

    it('BaseMultiModalInputWithUserContext (12 payload): the given session_id is kept, JSON and SSE', async () => {
      llm.script(reply.text('Blue.', { usage: u(80, 2) }), reply.chunks(['Bl', 'ue.'], { usage: u(80, 2) }));
      const body = await invokeJson('/ContextChatBot/0.1', USER_CONTEXT_REQUEST);
      expect(body).toMatchObject({ session_id: 'test-session-123', source: 'ContextChatBot:0.1', output_raw: 'Blue.', token_usage: sum(u(80, 2)) });
      const frames = await invokeSse('/ContextChatBot/0.1', USER_CONTEXT_REQUEST);
      expectOneCall(frames, 'ContextChatBot:0.1', 'test-session-123');
      expect(frames.at(-1)!.data).toMatchObject({ output_raw: 'Blue.' });
    });

    it('BaseInput ({role, content} history): JSON and SSE', async () => {
      llm.script(reply.text('Enjoy Oslo.', { usage: u(30, 3) }), reply.chunks(['Enjoy ', 'Oslo.'], { usage: u(30, 3) }));
      const body = await invokeJson('/TextChatBot/0.1', TEXT_REQUEST);
      expect(body).toMatchObject({ source: 'TextChatBot:0.1', output_raw: 'Enjoy Oslo.', token_usage: sum(u(30, 3)), extra_data: null, output_pydantic: null });
      const frames = await invokeSse('/TextChatBot/0.1', TEXT_REQUEST);
      expectOneCall(frames, 'TextChatBot:0.1');
      expect(frames.map((f) => f.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
    });

    it('health and liveness: HealthStatus and LivenessStatus', async () => {
      const health = await request(`${t.url}/ChatBot/0.1/health`);
      expect(health.status).toBe(200);
      expect(departures(health.body, HealthStatus)).toEqual([]);
      expect(health.body).toMatchObject({ status: 'healthy', version: '0.1' });
      const live = await request(`${t.url}/ChatBot/0.1/health/live`);
      expect(live.status).toBe(200);
      expect(departures(live.body, LivenessStatus)).toEqual([]);
      expect(live.body.alive).toBe(true);
    });
  });

  describe('skagents/v1 kind: Sequential', () => {
    it('one task, BaseInput (01_getting_started): JSON and SSE (no intermediate event for the only task)', async () => {
      llm.script(reply.text('Happy to help.', { usage: u(40, 4) }), reply.chunks(['Happy ', 'to help.'], { usage: u(40, 4) }));
      const body = await invokeJson('/GettingStarted/0.1', TEXT_REQUEST);
      expect(body).toMatchObject({
        source: 'GettingStarted:0.1',
        output_raw: 'Happy to help.',
        token_usage: sum(u(40, 4)),
        extra_data: null,
        output_pydantic: null,
      });
      const frames = await invokeSse('/GettingStarted/0.1', TEXT_REQUEST);
      expectOneCall(frames, 'GettingStarted:0.1');
      expect(frames.map((f) => f.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
    });

    it('three tasks (task_no 10, 20, 30): JSON answers with the last task, usage summed; each task sees the earlier ones', async () => {
      const usages = [u(50, 5), u(70, 7), u(90, 9)];
      llm.script(
        reply.text('Plan: museum', { usage: usages[0] }),
        reply.text('Plan checked', { usage: usages[1] }),
        reply.text('Go to the museum.', { usage: usages[2] }),
      );
      const first = llm.requests.length;
      const body = await invokeJson('/TripPlanner/0.1', TEXT_CONTEXT_REQUEST);
      expect(body).toMatchObject({
        source: 'TripPlanner:0.1',
        output_raw: 'Go to the museum.',
        token_usage: sum(...usages),
        extra_data: null,
        output_pydantic: null,
      });
      // As upstream's Task.invoke: one history; each task adds its instructions and its answer.
      const third = llm.requests[first + 2]!.body.messages.map((m: { role: string; content: string }) => [m.role, m.content.trim()]);
      expect(third).toEqual([
        ['system', 'You are a helpful assistant.'],
        ['user', 'Hi, I need help planning my day.'],
        ['assistant', 'Sure, where are you?'],
        ['user', 'I am in Oslo.'],
        ['user', 'Plan a day out for a user in Oslo.'],
        ['assistant', 'Plan: museum'],
        ['user', 'Check this plan: Plan: museum'],
        ['assistant', 'Plan checked'],
        ['user', 'Answer the user.\nPrevious operation: Plan checked'], // a folded (>) YAML scalar
      ]);
    });

    it('three tasks: SSE sends intermediate-task-response for each earlier task (task_no counted 1, 2), then the last task streamed', async () => {
      const usages = [u(50, 5), u(70, 7), u(90, 9)];
      llm.script(
        reply.text('Plan: museum', { usage: usages[0] }),
        reply.text('Plan checked', { usage: usages[1] }),
        reply.chunks(['Go to ', 'the museum.'], { usage: usages[2] }),
      );
      const frames = await invokeSse('/TripPlanner/0.1', TEXT_CONTEXT_REQUEST);
      expectOneCall(frames, 'TripPlanner:0.1');
      expect(frames.map((f) => f.event)).toEqual([
        'intermediate-task-response',
        'intermediate-task-response',
        'partial-response',
        'partial-response',
        'final-response',
      ]);
      const [one, two] = frames as { data: { task_no: number; task_name: string; response: Record<string, unknown> } }[];
      expect([one!.data.task_no, one!.data.task_name, two!.data.task_no, two!.data.task_name]).toEqual([1, 'action_task', 2, 'check_task']);
      expect(one!.data.response).toMatchObject({ output_raw: 'Plan: museum', token_usage: sum(usages[0]!), extra_data: null, output_pydantic: null });
      expect(two!.data.response).toMatchObject({ output_raw: 'Plan checked', token_usage: sum(usages[1]!) });
      expect(frames.at(-1)!.data).toMatchObject({ output_raw: 'Go to the museum.', token_usage: sum(...usages) });
    });

    it('BaseMultiModalInputWithUserContext (12_test_multimodal, its request payload): the session_id is kept', async () => {
      llm.script(reply.text('Blue buttons.', { usage: u(200, 3) }), reply.chunks(['Blue ', 'buttons.'], { usage: u(200, 3) }));
      const request = { ...USER_CONTEXT_REQUEST, chat_history: MULTIMODAL_REQUEST.chat_history };
      const body = await invokeJson('/TestMultimodalUserContextAgent/0.1', request);
      expect(body).toMatchObject({ session_id: 'test-session-123', source: 'TestMultimodalUserContextAgent:0.1', output_raw: 'Blue buttons.' });
      const frames = await invokeSse('/TestMultimodalUserContextAgent/0.1', request);
      expectOneCall(frames, 'TestMultimodalUserContextAgent:0.1', 'test-session-123');
    });
  });

  describe('skagents/v2alpha1', () => {
    it('BaseMultiModalInput: JSON InvokeResponse[NoneType]', async () => {
      llm.script(reply.text('Narwhals are whales.', { usage: u(60, 4) }));
      const body = await invokeJson(
        '/WikipediaAgent/0.1',
        { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'Search wikipedia for information on narwhals' }] }] },
        true,
      );
      expect(body).toEqual({
        session_id: expect.stringMatching(HEX32),
        source: 'WikipediaAgent:0.1',
        request_id: expect.stringMatching(HEX32),
        token_usage: sum(u(60, 4)),
        extra_data: null,
        output_raw: 'Narwhals are whales.',
        output_pydantic: null,
      });
    });

    it('SSE with a session_id and the older {role, content} history', async () => {
      llm.script(reply.chunks(['Narwhals ', 'are whales.'], { usage: u(60, 4) }));
      const frames = await invokeSse('/WikipediaAgent/0.1', { session_id: 'wiki-1', chat_history: [{ role: 'user', content: 'narwhals?' }] }, true);
      expectOneCall(frames, 'WikipediaAgent:0.1', 'wiki-1');
      expect(frames.map((f) => f.event)).toEqual(['partial-response', 'partial-response', 'final-response']);
      expect(frames.at(-1)!.data).toMatchObject({ output_raw: 'Narwhals are whales.', token_usage: sum(u(60, 4)), output_pydantic: null });
    });
  });
});
