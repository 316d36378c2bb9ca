/**
 * A2A (docs/a2a.md) driven by the official `@a2a-js/sdk` client (JSON-RPC, A2A v1.0), with Entra
 * tokens from a local issuer, against two replicas on one Redis store. Invariants: the card names
 * the endpoint and the security the server enforces; a contextId is our task (a follow-on in it sees
 * the whole conversation), an A2A task one of its requests; a stream ends with the request's outcome;
 * a resubscribe on the other replica follows the same request to its end; a pause is input-required
 * with the pause as a data part, and a reply carrying a decision resumes it (a stale one is an error
 * with our code); another user's or tenant's task is "task not found", never theirs.
 */
import { AgentCard, Role, TaskState } from '@a2a-js/sdk';
import type { Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import { randomUUID } from 'node:crypto';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { DEFAULT_TENANT, OidcIssuer } from '../support/oidc-issuer';
import { TestApp } from '../support/test-app';
import { ALICE, BOB, CAROL_T2, FrontDoorReplicas, startFrontDoorReplicas, tc, Who } from '../support/front-door-replicas';

const part = (content: Part['content']): Part => ({ content, metadata: undefined, filename: '', mediaType: '' });
function msg(parts: Part[], o: { contextId?: string; taskId?: string } = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: o.contextId ?? '',
    taskId: o.taskId ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
const say = (text: string, o: { contextId?: string; taskId?: string } = {}) => ({
  message: msg([part({ $case: 'text', value: text })], o),
  configuration: undefined,
  metadata: undefined,
  tenant: '',
});
const decide = (task: Task, decision: 'approve' | 'reject', pauseId: string) => ({
  message: msg([part({ $case: 'data', value: { decision, pause_id: pauseId } })], { taskId: task.id, contextId: task.contextId }),
  configuration: undefined,
  metadata: undefined,
  tenant: '',
});
const textOf = (t: Task) => t.artifacts.flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).join('');
const pauseOf = (t: Task) => {
  const data = t.status?.message?.parts.find((p) => p.content?.$case === 'data')?.content;
  return (data?.$case === 'data' ? data.value : undefined) as { pause_id: string; tool_calls: { id: string; name: string; risk: string | null }[] };
};

async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) out.push(e);
  return out;
}
const kinds = (events: StreamResponse[]) =>
  events.map((e) => (e.payload?.$case === 'statusUpdate' ? `status:${TaskState[e.payload.value.status!.state]}` : e.payload?.$case));

describe('A2A over JSON-RPC: two replicas on Redis, Entra tokens, the SDK client', () => {
  let replicas: FrontDoorReplicas;
  let issuer: OidcIssuer;
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    replicas = await startFrontDoorReplicas('a2a', 'A2A e2e', { TA_A2A_DEFAULT_AGENT: 'Guard/1' });
    ({ issuer, llm, a, b } = replicas);
  });
  afterAll(async () => {
    await replicas?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  /** An SDK client of `agent` on replica `t` as `who`, from the agent's card. */
  async function connect(t: TestApp, who: Who, agent = 'Guard/1'): Promise<Client> {
    const token = await issuer.mint(who);
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })], cardResolver: new DefaultAgentCardResolver({ fetchImpl }) });
    return factory.createFromUrl(`${t.url}/${agent}/.well-known/agent-card.json`, '');
  }

  it('serves the card (open), the root card of TA_A2A_DEFAULT_AGENT, and refuses the endpoint without a token', async () => {
    const json = (await (await fetch(`${a.url}/Guard/1/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
    const card = AgentCard.fromJSON(json as never);
    expect(card).toMatchObject({ name: 'Guard', version: '1', description: 'A2A e2e', capabilities: { streaming: true, pushNotifications: false } });
    expect(card.supportedInterfaces).toEqual([
      { url: `${a.url}/Guard/1/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: `${a.url}/Guard/1/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ]);
    expect(json.securitySchemes).toEqual({
      entra: {
        openIdConnectSecurityScheme: {
          description: expect.any(String),
          openIdConnectUrl: `${issuer.origin}/${DEFAULT_TENANT}/v2.0/.well-known/openid-configuration`,
        },
      },
    });
    expect(json.securityRequirements).toEqual([{ schemes: { entra: { list: ['agents.invoke'] } } }]); // TA_ENTRA_REQUIRED_SCOPES
    expect(await (await fetch(`${b.url}/.well-known/agent-card.json`)).json()).toEqual({ ...json, supportedInterfaces: expect.any(Array) });
    expect((await fetch(`${a.url}/Echo/0.1/.well-known/agent-card.json`)).status).toBe(200);
    const index = (await (await fetch(`${a.url}/`, { headers: { accept: 'application/json' } })).json()) as { agents: { links: { a2a_card?: string } }[] };
    expect(index.agents.map((x: { links: { a2a_card?: string } }) => x.links.a2a_card)).toEqual([
      '/Echo/0.1/.well-known/agent-card.json',
      '/Guard/1/.well-known/agent-card.json',
    ]);
    const anonymous = await fetch(`${a.url}/Guard/1/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
    });
    expect(anonymous.status).toBe(401);
  });

  it('send, then a follow-on in the same context on the other replica: the model sees the history; get reads each task', async () => {
    llm.script(reply.text('Hello Ada.'), reply.text('Your name is Ada.'));
    const first = (await (await connect(a, ALICE)).sendMessage(say('my name is Ada'))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(first)).toBe('Hello Ada.');
    expect(first.metadata).toMatchObject({ task_id: first.contextId, request_id: first.id, session_id: expect.any(String) });

    const onB = await connect(b, ALICE);
    const second = (await onB.sendMessage(say('what is my name?', { contextId: first.contextId }))) as Task;
    expect(second).toMatchObject({ contextId: first.contextId, status: { state: TaskState.TASK_STATE_COMPLETED } });
    expect(second.id).not.toBe(first.id);
    expect(textOf(second)).toBe('Your name is Ada.');
    const seen = llm.requests.at(-1)!.body.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`);
    expect(seen).toEqual(['system: Be brief.', 'user: my name is Ada', 'assistant: Hello Ada.', 'user: what is my name?']);
    const read = await onB.getTask({ id: first.id, historyLength: undefined, tenant: '' });
    expect(read).toMatchObject({ id: first.id, contextId: first.contextId, status: { state: TaskState.TASK_STATE_COMPLETED } });
    expect(textOf(read)).toBe('Hello Ada.');
  });

  it('streams: the task, the answer in chunks, then completed', async () => {
    llm.script(reply.chunks(['Hel', 'lo ', 'there']));
    const events = await collect((await connect(a, ALICE)).sendMessageStream(say('hi')));
    expect(kinds(events)).toEqual(['task', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'artifactUpdate', 'status:TASK_STATE_COMPLETED']);
    const last = events.at(-2)!.payload;
    expect(last?.$case === 'artifactUpdate' && last.value).toMatchObject({
      lastChunk: true,
      append: false,
      artifact: { parts: [{ content: { value: 'Hello there' } }] },
    });
  });

  it('resubscribes on the other replica to a request running on the first, and follows it to its end', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    llm.script(reply.chunks(['one ', 'two'], { steps: [{ until: released, chunks: [' three'] }] }));
    const stream = (await connect(a, ALICE)).sendMessageStream(say('count'));
    const opened = (await stream.next()).value as StreamResponse;
    const task = opened.payload?.$case === 'task' ? opened.payload.value : undefined;
    expect(task?.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await llm.waitForRequest(llm.requests.length - 1);
    const followed = (await connect(b, ALICE)).resubscribeTask({ id: task!.id, tenant: '' });
    const firstOnB = (await followed.next()).value as StreamResponse;
    expect(firstOnB.payload?.$case).toBe('task');
    release();
    const rest = [...(await collect(followed))];
    expect(kinds(rest).at(-1)).toBe('status:TASK_STATE_COMPLETED');
    const final = rest.at(-2)!.payload;
    expect(final?.$case === 'artifactUpdate' && final.value.artifact?.parts[0]?.content).toEqual({ $case: 'text', value: 'one two three' });
    await collect(stream);
  });

  it('cancels a running task', async () => {
    llm.script(reply.hang());
    const client = await connect(a, ALICE);
    const started = (await client.sendMessage({ ...say('take your time'), configuration: returnImmediately() })) as Task;
    expect(started.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await llm.waitForRequest(llm.requests.length - 1);
    const canceled = await client.cancelTask({ id: started.id, metadata: undefined, tenant: '' });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.cancelTask({ id: started.id, metadata: undefined, tenant: '' })).rejects.toThrow(/nothing to cancel/);
  });

  it('input-required with the pause; approved on the other replica it runs; a second pause rejected ends canceled; a stale decision is an error with our code', async () => {
    llm.script(reply.toolCalls([tc('w1', 'Notes-wipe', { id: 'a' })]), reply.text('Wiped note a.'));
    const paused = (await (await connect(a, ALICE)).sendMessage(say('wipe note a'))) as Task;
    expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const pause = pauseOf(paused);
    expect(pause).toMatchObject({ pause_id: expect.any(String), tool_calls: [{ id: 'w1', name: 'Notes-wipe', risk: expect.any(String) }] });
    const onB = await connect(b, ALICE);
    const done = (await onB.sendMessage(decide(paused, 'approve', pause.pause_id))) as Task;
    expect(done).toMatchObject({ id: paused.id, status: { state: TaskState.TASK_STATE_COMPLETED } });
    expect(textOf(done)).toBe('Wiped note a.');
    expect(llm.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: 'wiped a' });

    const stale = await onB.sendMessage(decide(paused, 'approve', pause.pause_id)).catch((e: unknown) => e);
    expect(stale).toMatchObject({ errorResponse: { error: { code: -32000, data: [{ reason: 'APPROVAL_ALREADY_DECIDED', metadata: { status: '409' } }] } } });

    llm.script(reply.toolCalls([tc('w2', 'Notes-wipe', { id: 'b' })]));
    const again = (await onB.sendMessage(say('wipe note b', { contextId: paused.contextId }))) as Task;
    expect(again.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const rejected = (await (await connect(a, ALICE)).sendMessage(decide(again, 'reject', pauseOf(again).pause_id))) as Task;
    expect(rejected.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('streamed: a pause ends the stream input-required; a streamed decision goes on under the same task to completed', async () => {
    llm.script(reply.toolCalls([tc('w3', 'Notes-wipe', { id: 'c' })]), reply.chunks(['Wiped ', 'c.']));
    const client = await connect(a, ALICE);
    const paused = await collect(client.sendMessageStream(say('wipe note c')));
    const last = paused.at(-1)!.payload;
    expect(last?.$case).toBe('statusUpdate');
    const status = last?.$case === 'statusUpdate' ? last.value : undefined;
    expect(status?.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const task = { id: status!.taskId, contextId: status!.contextId } as Task;
    const pauseId = pauseOf({ status: status!.status } as Task).pause_id;
    const resumed = await collect((await connect(b, ALICE)).sendMessageStream(decide(task, 'approve', pauseId)));
    expect(kinds(resumed).at(-1)).toBe('status:TASK_STATE_COMPLETED');
    expect(resumed[0]!.payload).toMatchObject({ $case: 'task', value: { id: task.id, contextId: task.contextId } });
  });

  it("another user's or tenant's task is not found; their contextId is a conversation of their own", async () => {
    llm.script(reply.text('Secret noted.'));
    const mine = (await (await connect(a, ALICE)).sendMessage(say('the secret is 42'))) as Task;
    for (const who of [BOB, CAROL_T2]) {
      const other = await connect(b, who);
      await expect(other.getTask({ id: mine.id, historyLength: undefined, tenant: '' })).rejects.toBeInstanceOf(TaskNotFoundError);
      await expect(other.cancelTask({ id: mine.id, metadata: undefined, tenant: '' })).rejects.toBeInstanceOf(TaskNotFoundError);
      await expect(collect(other.resubscribeTask({ id: mine.id, tenant: '' }))).rejects.toBeInstanceOf(TaskNotFoundError);
      await expect(other.sendMessage(decide(mine, 'approve', 'p'))).rejects.toBeInstanceOf(TaskNotFoundError);
    }
    await expect((await connect(b, BOB)).sendMessage(say('what is the secret?', { contextId: mine.contextId }))).rejects.toBeInstanceOf(TaskNotFoundError);
    llm.script(reply.text('I know no secret.'));
    const carols = (await (await connect(b, CAROL_T2)).sendMessage(say('what is the secret?', { contextId: mine.contextId }))) as Task;
    expect(carols).toMatchObject({ contextId: mine.contextId, status: { state: TaskState.TASK_STATE_COMPLETED } });
    const seen = llm.requests.at(-1)!.body.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`);
    expect(seen).toEqual(['system: Be brief.', 'user: what is the secret?']);
  });

  it('speaks the v0.3 method names too (no A2A-Version header): message/send, then tasks/get', async () => {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${await issuer.mint(ALICE)}` };
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${b.url}/Echo/0.1/a2a`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) });
      return (await res.json()) as { id: number; result?: Record<string, unknown>; error?: { code: number } };
    };
    const sent = await rpc('message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'old client' }] },
    });
    expect(sent).toMatchObject({
      id: 7,
      result: { kind: 'task', status: { state: 'completed' }, artifacts: [{ parts: [{ kind: 'text', text: 'old client' }] }] },
    });
    expect(await rpc('tasks/get', { id: sent.result!.id })).toMatchObject({ error: { code: -32001 } });
    const params = { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'streamed old' }] } };
    const streamed = await fetch(`${b.url}/Echo/0.1/a2a`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'message/stream', params }),
    });
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await streamed.text())
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => (JSON.parse(l.slice(6)) as { result: { kind: string; status?: { state: string } } }).result);
    expect(frames[0]).toMatchObject({ kind: 'task' });
    expect(frames.at(-1)).toMatchObject({ kind: 'status-update', status: { state: 'completed' } });
  });

  it('a stateless agent answers a completed task in a fresh context', async () => {
    const echo = await connect(a, ALICE, 'Echo/0.1');
    const one = (await echo.sendMessage(say('hello there'))) as Task;
    const two = (await echo.sendMessage(say('again'))) as Task;
    expect(one).toMatchObject({ status: { state: TaskState.TASK_STATE_COMPLETED } });
    expect(textOf(one)).toBe('hello there');
    expect(two.contextId).not.toBe(one.contextId);
    const streamed = await collect(echo.sendMessageStream(say('streamed')));
    expect(kinds(streamed).at(-1)).toBe('status:TASK_STATE_COMPLETED');
    await expect(echo.getTask({ id: one.id, historyLength: undefined, tenant: '' })).rejects.toBeInstanceOf(TaskNotFoundError);
  });
});

function returnImmediately() {
  return { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true };
}
