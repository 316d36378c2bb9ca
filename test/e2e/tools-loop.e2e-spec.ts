import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fakeModelEnv } from '../support/fake-model-app';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson, request } from '../support/http';
import { McpTestServer, startMcpTestServer } from '../support/mcp-test-server';
import { openSse, parseSse, SseEvent, SseReader } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const EVERYTHING = resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** What the `Lab` plugin saw, shared with the test through the global object. */
interface LabState {
  flakyFailures: number;
  calls: Record<string, number>;
  aborted: number;
}
const lab: LabState = ((globalThis as { __lab?: LabState }).__lab = { flakyFailures: 0, calls: {}, aborted: 0 });

const LAB_PLUGIN = `
const lab = () => globalThis.__lab;
const count = (name) => { lab().calls[name] = (lab().calls[name] ?? 0) + 1; };
const pair = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false };
exports.plugins = [{ name: 'Lab', tools: [
  { name: 'add', description: 'Adds a and b', parameters: pair, risk: 'read_only', handler: ({ a, b }) => { count('add'); return String(a + b); } },
  { name: 'boom', description: 'Always throws', risk: 'read_only', handler: () => { count('boom'); throw new Error('kaput'); } },
  { name: 'flaky', description: 'Fails while flakyFailures > 0', risk: 'read_only', handler: () => {
      count('flaky');
      if (lab().flakyFailures > 0) { lab().flakyFailures--; throw Object.assign(new Error('busy, try again'), { retryable: true }); }
      return 'steady now';
  } },
  { name: 'slow', description: 'Waits ms, or until aborted', risk: 'read_only',
    parameters: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] },
    handler: ({ ms }, { signal }) => new Promise((resolve, reject) => {
      count('slow');
      const t = setTimeout(() => resolve('waited ' + ms), ms);
      signal.addEventListener('abort', () => { clearTimeout(t); lab().aborted++; reject(signal.reason); });
    }) },
  { name: 'whoami', description: 'The caller', risk: 'read_only', handler: (_a, ctx) => ctx.principal.ownerId },
] }];
`;

/** The reference MCP server (server-everything) as a stdio child of the app: an `mcp_servers` entry. */
const EV_SERVER = `      - name: ev
        transport: stdio
        command: ${process.execPath}
        args: ["${EVERYTHING}", "stdio"]
        request_timeout: 10
`;

const agentYaml = (mcpUrl: string) => `
apiVersion: tealagents/v1alpha1
name: Lab
version: 1
description: Tool loop e2e
spec:
  agent:
    name: default
    model: gpt-test
    system_prompt: Use tools.
    max_tool_rounds: 2
    plugins: [Lab]
    mcp_servers:
${EV_SERVER}      - name: remote
        transport: http
        url: ${mcpUrl}
        user_id_header: X-User-Id
        request_timeout: 2
`;

const STATELESS = `
apiVersion: skagents/v2alpha1
name: LabV2
version: 1
metadata:
  description: Stateless tool loop e2e
  skills: []
spec:
  agent:
    name: default
    model: gpt-test
    plugins: [Lab]
`;

const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

/** Children of this process whose command line mentions `needle` (the stdio MCP servers the app started). */
function childPids(needle: string): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', needle], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Kills the stdio MCP server once the run on `stream` has called it; the dead pid, the run's events and its tool result. */
async function killServerMidCall(stream: SseReader): Promise<{ pid: number; events: SseEvent[]; result: Record<string, unknown> }> {
  await stream.readUntil((s) => s.includes('event: tool-call'));
  const [pid] = childPids('server-everything');
  await new Promise((r) => setTimeout(r, 150)); // let the call reach the server
  process.kill(pid!, 'SIGKILL');
  const events = parseSse(await stream.readAll());
  return { pid: pid!, events, result: JSON.parse(events.find((e) => e.event === 'tool-result')!.data) as Record<string, unknown> };
}

describe('the tool loop through the HTTP API (fake OpenAI-compatible model, real tools)', () => {
  let llm: FakeOpenAi;
  let mcp: McpTestServer;
  let t: TestApp;
  let api: ReturnType<typeof v3Client>;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    mcp = await startMcpTestServer();
    const dir = writeAgentDir({ 'lab.yaml': agentYaml(mcp.url), 'lab-v2.yaml': STATELESS });
    writeFileSync(join(dir, 'custom_plugins.js'), LAB_PLUGIN);
    t = await startTestApp({
      configPath: dir,
      env: fakeModelEnv(llm, { TA_TOOL_TIMEOUT_MS: '300', TA_TOOL_MAX_RETRIES: '2', TA_TOOL_RETRY_BASE_MS: '5' }),
    });
    api = v3Client(`${t.url}/Lab/1`);
  });
  afterAll(async () => {
    await t?.close();
    await mcp?.stop();
    await llm?.close();
  });
  beforeEach(() => {
    lab.calls = {};
    lab.aborted = 0;
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  const lastRequests = (n: number) => llm.requests.slice(-n).map((r) => r.body);

  it('single call: runs the tool, gives the model its result, and stores the round and its trace', async () => {
    llm.script(reply.toolCalls([tc('call_a', 'Lab-add', { a: 2, b: 3 })]), reply.text('It is 5.'));
    const res = await api.say('add 2 and 3');
    expect(res.status).toBe(200);
    expect(res.body.content.output).toBe('It is 5.');

    const [first, second] = lastRequests(2);
    const names = first.tools.map((x: { function: { name: string } }) => x.function.name);
    expect(names).toEqual(expect.arrayContaining(['Lab-add', 'Lab-boom', 'ev-echo', 'ev-get-sum', 'remote-whoami', 'remote-echo']));
    expect(second.tools).toEqual(first.tools); // every model request carries every tool
    expect(second.messages).toEqual([
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: 'add 2 and 3' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'Lab-add', arguments: '{"a":2,"b":3}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: '5' },
    ]);

    const task = await api.task(res.body.task_id);
    const stored = task.body.requests[0];
    expect(stored.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored.messages[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_a', content: '5', is_error: false });
    expect(stored.tool_calls).toEqual([
      {
        id: 'call_a',
        name: 'Lab-add',
        arguments: '{"a":2,"b":3}',
        started_at: expect.any(String),
        duration_ms: expect.any(Number),
        outcome: 'ok',
        result: '5',
      },
    ]);
  });

  it('v3 follow-on: the model input replays the tool round exactly, message by message', async () => {
    llm.script(reply.toolCalls([tc('call_x', 'Lab-add', { a: 1, b: 1 })], { text: 'Adding.' }), reply.text('2.'));
    const first = await api.say('1+1?');
    llm.script(reply.text('Still 2.'));
    const second = await api.say('sure?', { task_id: first.body.task_id });
    expect(second.status).toBe(200);
    expect(lastRequests(1)[0].messages).toEqual([
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: '1+1?' },
      { role: 'assistant', content: 'Adding.', tool_calls: [{ id: 'call_x', type: 'function', function: { name: 'Lab-add', arguments: '{"a":1,"b":1}' } }] },
      { role: 'tool', tool_call_id: 'call_x', content: '2' },
      { role: 'assistant', content: '2.' },
      { role: 'user', content: 'sure?' },
    ]);
  });

  it('parallel calls: all run, and results come back in call order, paired by id', async () => {
    llm.script(
      reply.toolCalls([tc('c1', 'Lab-slow', { ms: 60 }), tc('c2', 'Lab-add', { a: 1, b: 2 }), tc('c3', 'remote-echo', { text: 'hi' })]),
      reply.text('done'),
    );
    const res = await api.say('three things');
    expect(res.status).toBe(200);
    const tools = lastRequests(1)[0].messages.filter((m: { role: string }) => m.role === 'tool');
    expect(tools).toEqual([
      { role: 'tool', tool_call_id: 'c1', content: 'waited 60' },
      { role: 'tool', tool_call_id: 'c2', content: '3' },
      { role: 'tool', tool_call_id: 'c3', content: 'echo: hi' },
    ]);
  });

  it('a failing tool is fed back to the model as an error result, and the request completes', async () => {
    llm.script(reply.toolCalls([tc('b1', 'Lab-boom', {})]), reply.text('Sorry, that failed.'));
    const res = await api.say('explode');
    expect(res.status).toBe(200);
    expect(lastRequests(1)[0].messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'b1', content: 'Error: Lab-boom failed: kaput' });
    expect(lab.calls.boom).toBe(1); // not retried: not a transient failure
    const task = await api.task(res.body.task_id);
    expect(task.body.requests[0].tool_calls[0]).toMatchObject({ outcome: 'error', result: 'Error: Lab-boom failed: kaput' });
    expect(task.body.requests[0].messages[2]).toMatchObject({ is_error: true });
  });

  it('bad arguments are returned to the model as an error, without calling the tool', async () => {
    llm.script(reply.toolCalls([tc('bad', 'Lab-add', { a: 'two', b: 2 })]), reply.text('Oops.'));
    await api.say('add two and 2');
    expect(lastRequests(1)[0].messages.at(-1).content).toMatch(/^Error: invalid arguments for Lab-add: arguments\/a must be number/);
    expect(lab.calls.add).toBeUndefined();
  });

  it('retries a transient failure with backoff, then succeeds', async () => {
    lab.flakyFailures = 2;
    llm.script(reply.toolCalls([tc('f1', 'Lab-flaky', {})]), reply.text('ok'));
    await api.say('flaky');
    expect(lastRequests(1)[0].messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'f1', content: 'steady now' });
    expect(lab.calls.flaky).toBe(3);
  });

  it('times a tool out (TA_TOOL_TIMEOUT_MS), aborting it through its signal', async () => {
    llm.script(reply.toolCalls([tc('s1', 'Lab-slow', { ms: 30_000 })]), reply.text('too slow'));
    const started = Date.now();
    const res = await api.say('wait forever');
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(lastRequests(1)[0].messages.at(-1).content).toBe('Error: Lab-slow failed: timed out after 300 ms');
    expect(lab.calls.slow).toBe(3); // read-only, so retried twice
    expect(lab.aborted).toBe(3);
  });

  it('ends a runaway loop after max_tool_rounds with a clear error, keeping the trace', async () => {
    const again = () => reply.toolCalls([tc('', 'Lab-add', { a: 1, b: 1 })]);
    llm.script(again(), again(), again());
    const res = await api.say('loop');
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('TOOL_ROUNDS_EXCEEDED');
    expect(res.body.detail).toMatch(/asked for tools 3 times without giving an answer; spec.agent.max_tool_rounds allows 2/);

    llm.script(again(), again(), again());
    const stream = await openSse(`${t.url}/Lab/1/sse`, { items: [{ content_type: 'text', content: 'loop' }] });
    const error = JSON.parse(parseSse(await stream.readAll()).find((e) => e.event === 'error')!.data);
    expect(error.code).toBe('TOOL_ROUNDS_EXCEEDED');
    const task = await api.task(error.task_id);
    expect(task.body.requests[0]).toMatchObject({ status: 'Failed', error: { code: 'TOOL_ROUNDS_EXCEEDED' } });
    expect(task.body.requests[0].tool_calls.map((c: { outcome: string }) => c.outcome)).toEqual(['ok', 'ok']);
  });

  it('retries a read-only MCP call whose server was killed mid-call, on a fresh server process', async () => {
    llm.script(reply.toolCalls([tc('k0', 'ev-trigger-long-running-operation', { duration: 1, steps: 1 })]), reply.text('done'));
    const { pid, result } = await killServerMidCall(await openSse(`${t.url}/Lab/1/sse`, { items: [{ content_type: 'text', content: 'long op' }] }));
    expect(result).toMatchObject({ outcome: 'ok', result: 'Long running operation completed. Duration: 1 seconds, Steps: 1.' });
    expect(childPids('server-everything')).toHaveLength(1);
    expect(childPids('server-everything')).not.toContain(pid);
  });

  it("sends the authenticated caller's id to the MCP server, never one from the model", async () => {
    llm.script(reply.toolCalls([tc('w1', 'remote-whoami', { user: 'mallory' })]), reply.text('ok'));
    await postJson(`${t.url}/Lab/1`, { items: [{ content_type: 'text', content: 'who am I?' }] }, { 'x-dev-user': 'carol' });
    expect(JSON.parse(lastRequests(1)[0].messages.at(-1).content)).toEqual({ user: 'carol', token: false });
  });

  it('streams tool-call and tool-result events on v3 SSE, with the task and request ids', async () => {
    llm.script(reply.toolCalls([tc('e1', 'Lab-add', { a: 4, b: 4 })]), reply.chunks(['Eight', '.']));
    const stream = await openSse(`${t.url}/Lab/1/sse`, { items: [{ content_type: 'text', content: '4+4' }] });
    const events = parseSse(await stream.readAll()).filter((e) => e.event);
    expect(events.map((e) => e.event)).toEqual(['tool-call', 'tool-result', 'partial-response', 'partial-response', 'final-response']);
    const [call, result] = events.map((e) => JSON.parse(e.data));
    const ids = { task_id: expect.any(String), session_id: expect.any(String), request_id: expect.any(String) };
    expect(call).toEqual({ ...ids, tool_call_id: 'e1', name: 'Lab-add', arguments: '{"a":4,"b":4}' });
    expect(result).toEqual({ ...ids, tool_call_id: 'e1', name: 'Lab-add', outcome: 'ok', result: '8', duration_ms: expect.any(Number) });
    expect(call.request_id).toBe(JSON.parse(events.at(-1)!.data).request_id);
  });

  it('a canceled request aborts its running tools', async () => {
    llm.script(reply.toolCalls([tc('c9', 'Lab-slow', { ms: 30_000 })]));
    const stream = await openSse(`${t.url}/Lab/1/sse`, { items: [{ content_type: 'text', content: 'slow' }] });
    const head = await stream.readUntil((s) => s.includes('event: tool-call'));
    const taskId = JSON.parse(parseSse(head).find((e) => e.event === 'tool-call')!.data).task_id;
    const cancel = await request(`${t.url}/Lab/1/tasks/${taskId}/cancel`, { method: 'POST' });
    expect(cancel.status).toBeLessThan(300);
    const events = parseSse(await stream.readAll()).filter((e) => e.event);
    expect(lab.aborted).toBe(1);
    expect(events.map((e) => e.event)).toContain('cancelled');
    const task = await api.task(taskId);
    expect(task.body.requests[0]).toMatchObject({ status: 'Canceled' });
    expect(task.body.requests[0].tool_calls[0]).toMatchObject({ id: 'c9', outcome: 'canceled' });
  });

  it('v2 (stateless): runs the loop too; its stream has upstream events only', async () => {
    llm.script(reply.toolCalls([tc('v1', 'Lab-add', { a: 5, b: 5 })], { text: 'Let me see. ' }), reply.chunks(['10']));
    const stream = await openSse(`${t.url}/LabV2/1/sse`, { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: '5+5' }] }] });
    const events = parseSse(await stream.readAll()).filter((e) => e.event);
    expect(new Set(events.map((e) => e.event))).toEqual(new Set(['partial-response', 'final-response']));
    const final = JSON.parse(events.at(-1)!.data);
    expect(final.output_raw).toBe('10');
    expect(lastRequests(1)[0].messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'v1', content: '10' });
  });
});

describe('an MCP server killed mid-call, without retries (TA_TOOL_MAX_RETRIES=0)', () => {
  let llm: FakeOpenAi;
  let t: TestApp;
  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const agent = `
apiVersion: tealagents/v1alpha1
name: Kill
version: 1
description: MCP crash e2e
spec:
  agent:
    name: default
    model: gpt-test
    mcp_servers:
${EV_SERVER}`;
    t = await startTestApp({
      agents: { 'kill.yaml': agent },
      env: fakeModelEnv(llm, { TA_TOOL_MAX_RETRIES: '0' }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });

  it('gives the model an error result at once, and the next request reconnects; closing the app stops the child', async () => {
    llm.script(reply.toolCalls([tc('k1', 'ev-trigger-long-running-operation', { duration: 30, steps: 1 })]), reply.text('it died'));
    const started = Date.now();
    const { pid, events, result } = await killServerMidCall(await openSse(`${t.url}/Kill/1/sse`, { items: [{ content_type: 'text', content: 'long op' }] }));
    expect(result).toMatchObject({ tool_call_id: 'k1', outcome: 'error' });
    expect(result.result).toMatch(/^Error: ev-trigger-long-running-operation failed: .*Connection closed/i);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ status: 'Completed', content: { output: 'it died' } });
    expect(llm.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'k1', content: result.result });

    llm.script(reply.toolCalls([tc('k2', 'ev-echo', { message: 'back' })]), reply.text('back'));
    expect((await postJson(`${t.url}/Kill/1`, { items: [{ content_type: 'text', content: 'again' }] })).status).toBe(200);
    expect(llm.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'k2', content: 'Echo: back' });
    const [fresh] = childPids('server-everything');
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(pid);

    await t.close();
    for (let i = 0; i < 50 && childPids('server-everything').length; i++) await new Promise((r) => setTimeout(r, 50));
    expect(childPids('server-everything')).toEqual([]);
  });
});
