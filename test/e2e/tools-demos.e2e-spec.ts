import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTodoMcpServer, TodoMcpServer } from '../../demos/mcp/todo-mcp.server';
import { ToolRegistry } from '../../src/tools/tool-registry';
import { postJson } from '../support/http';
import { OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const DEMOS = join(__dirname, '../../demos/agents');
const demo = (file: string) => readFileSync(join(DEMOS, file), 'utf8');

/** The demos as shipped, on the offline model: a real tool round trip without a network. */
describe('tool demos on the offline model (local/echo)', () => {
  let todo: TodoMcpServer;
  let t: TestApp;
  let otlp: OtlpReceiver;

  beforeAll(async () => {
    todo = await startTodoMcpServer();
    otlp = await startOtlpReceiver();
    t = await startTestApp({
      env: { TA_OTEL_ENDPOINT: otlp.url },
      agents: {
        'calculator.yaml': demo('calculator.yaml'),
        // the shipped file, pointed at this test's server instead of port 3001
        'todo-assistant.yaml': demo('todo-assistant.yaml').replace('http://127.0.0.1:3001/mcp', todo.url),
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await todo?.stop();
    await otlp?.close();
  });

  it('Calculator: /tool lines make one parallel round with the demo plugins, and the answer is their results', async () => {
    const api = v3Client(`${t.url}/Calculator/0.1`);
    const res = await api.say('/tool Calculator-multiply {"a": 6, "b": 7}\n/tool Weather-get_forecast {"city": "Oslo", "days": 2}');
    expect(res.status).toBe(200);
    const [product, forecast] = res.body.content.output.split('\n');
    expect(product).toBe('42');
    expect(JSON.parse(forecast)).toMatchObject({ city: 'Oslo', forecast: [{ day: 1 }, { day: 2 }] });

    // one execute_tool span per call, children of the request's invoke_agent span
    await otlp.waitFor(() => otlp.spans().filter((s) => s.name.startsWith('execute_tool ')).length >= 2, 'two execute_tool spans');
    const agentSpan = otlp.spans().find((s) => s.name === 'invoke_agent Calculator:0.1' && s.attributes['ta.task_id'] === res.body.task_id)!;
    const toolSpans = otlp.spans().filter((s) => s.parentSpanId === agentSpan.spanId && s.name.startsWith('execute_tool '));
    expect(toolSpans.map((s) => [s.name, s.attributes['gen_ai.tool.name'], s.attributes['ta.tool.outcome'], s.attributes['ta.tool.source']]).sort()).toEqual([
      ['execute_tool Calculator-multiply', 'Calculator-multiply', 'ok', 'plugin:Calculator'],
      ['execute_tool Weather-get_forecast', 'Weather-get_forecast', 'ok', 'plugin:Weather'],
    ]);

    const task = await api.task(res.body.task_id);
    const r = task.body.requests[0];
    expect(r.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(r.tool_calls.map((c: { name: string; outcome: string }) => [c.name, c.outcome])).toEqual([
      ['Calculator-multiply', 'ok'],
      ['Weather-get_forecast', 'ok'],
    ]);
  });

  it('Calculator: errors and unknown tools come back as text, and the stream shows the tool events', async () => {
    const api = v3Client(`${t.url}/Calculator/0.1`);
    expect((await api.say('/tool Calculator-divide {"a": 1, "b": 0}')).body.content.output).toBe('Error: Calculator-divide failed: cannot divide by zero');
    expect((await api.say('/tool Calculator-sqrt {"x": 2}')).body.content.output).toMatch(
      /^Unknown tool Calculator-sqrt\. The tools of this agent: Calculator-add, /,
    );

    const stream = await openSse(`${t.url}/Calculator/0.1/sse`, { items: [{ content_type: 'text', content: '/tool Calculator-add {"a": 2, "b": 2}' }] });
    const events = parseSse(await stream.readAll()).filter((e) => e.event);
    expect(events.map((e) => e.event)).toEqual(['tool-call', 'tool-result', 'partial-response', 'final-response']);
    expect(JSON.parse(events[1]!.data)).toMatchObject({ name: 'Calculator-add', outcome: 'ok', result: '4' });
  });

  it('TodoAssistant: each caller sees only their own to-dos (the server injects the identity, never the model)', async () => {
    const as = (user: string) => v3Client(`${t.url}/TodoAssistant/0.1`, { 'x-dev-user': user });
    const say = async (user: string, text: string) => (await as(user).say(text)).body.content.output as string;

    expect(await say('alice', '/tool todo-add_task {"title": "buy milk"}')).toBe('Added task 1: buy milk');
    expect(await say('alice', '/tool todo-add_task {"title": "file taxes"}')).toBe('Added task 2: file taxes');
    expect(await say('bob', '/tool todo-add_task {"title": "call mum"}')).toBe('Added task 1: call mum');

    expect(await say('alice', '/tool todo-complete_task {"id": "1"}')).toBe('Completed 1. [x] buy milk');
    expect(await say('alice', '/tool todo-update_task {"id": "2", "title": "file taxes today"}')).toBe('Updated 2. [ ] file taxes today');
    expect(await say('alice', '/tool todo-list_tasks {}')).toBe('1. [x] buy milk\n2. [ ] file taxes today');
    expect(await say('bob', '/tool todo-list_tasks {"status": "open"}')).toBe('1. [ ] call mum');

    // A user id chosen by the model changes nothing: no tool reads one...
    expect(await say('bob', '/tool todo-list_tasks {"user": "alice"}')).toBe('1. [ ] call mum');
    // ...and bob cannot reach alice's task 2 by its id.
    expect(await say('bob', '/tool todo-delete_task {"id": "2"}')).toBe('Error: no task 2 in your list');
    expect(await say('alice', '/tool todo-delete_task {"id": "2"}')).toBe('Deleted task 2');
    expect(await say('alice', '/tool todo-list_tasks {"status": "open"}')).toBe('No tasks.');
  });

  it('TodoAssistant: the tools carry the risk their MCP annotations give', async () => {
    const res = await postJson(`${t.url}/TodoAssistant/0.1`, { items: [{ content_type: 'text', content: '/tool todo-list_tasks {}' }] });
    expect(res.status).toBe(200);
    const registry = t.app.get(ToolRegistry);
    const tools = await registry.toolsetFor(t.agents.find((a) => a.name === 'TodoAssistant')!.agent).resolve();
    expect(Object.fromEntries([...tools.values()].map((x) => [x.name, x.risk]))).toEqual({
      'todo-add_task': 'write_low_risk',
      'todo-list_tasks': 'read_only',
      'todo-complete_task': 'write_low_risk',
      'todo-update_task': 'write_low_risk',
      'todo-delete_task': 'write_high_risk',
    });
  });
});
