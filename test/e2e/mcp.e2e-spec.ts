/**
 * MCP (docs/mcp.md) driven by the official SDK client over Streamable HTTP, with Entra tokens from
 * a local issuer, against two replicas on one Redis store (the endpoint is stateless: any replica
 * serves any request). Invariants: a turn's answer carries its ids; a follow-on by task_id on the
 * other replica sees the whole conversation; a call that needs approval never runs before a
 * decision, taken through `decide` or, for a client that declares the capability, an elicitation;
 * another user's or tenant's task is refused as on the REST routes; an unauthenticated call is a
 * 401 naming the protected-resource metadata, which names the Entra authority.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FakeOpenAi, reply } from '../support/fake-openai.server';
import { DEFAULT_TENANT, OidcIssuer } from '../support/oidc-issuer';
import { TestApp } from '../support/test-app';
import { ALICE, BOB, CAROL_T2, FrontDoorReplicas, startFrontDoorReplicas, tc, Who } from '../support/front-door-replicas';

type Elicitation = (params: { message: string; requestedSchema: unknown }) => Record<string, unknown>;

describe('MCP over Streamable HTTP: two replicas on Redis, Entra tokens', () => {
  let replicas: FrontDoorReplicas;
  let issuer: OidcIssuer;
  let llm: FakeOpenAi;
  let a: TestApp;
  let b: TestApp;
  const clients: Client[] = [];

  beforeAll(async () => {
    replicas = await startFrontDoorReplicas('mcp', 'MCP e2e');
    ({ issuer, llm, a, b } = replicas);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await replicas?.close();
  });
  afterEach(() => expect(llm.pending()).toBe(0));

  /** An SDK client of `agent` on replica `t` as `who`; with `elicit`, it declares elicitation and answers with it. */
  async function connect(t: TestApp, who: Who, agent = 'Guard/1', elicit?: Elicitation, fetchVia?: typeof fetch): Promise<Client> {
    const token = await issuer.mint(who);
    const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/${agent}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      ...(fetchVia ? { fetch: fetchVia } : {}),
    });
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' }, { capabilities: elicit ? { elicitation: {} } : {} });
    if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => elicit(req.params as { message: string; requestedSchema: unknown }));
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const facts = (r: CallToolResult) => r.structuredContent as Record<string, unknown>;

  it('lists the tools: send_message, get_task and decide for a stateful agent; send_message alone for a stateless one', async () => {
    const guard = await connect(a, ALICE);
    const tools = (await guard.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(['send_message', 'get_task', 'decide']);
    expect(tools[0]!.inputSchema).toMatchObject({ type: 'object', required: ['text'], properties: { text: {}, task_id: {}, session_id: {} } });
    expect(tools[2]!.inputSchema).toMatchObject({ required: ['task_id', 'pause_id', 'action'], properties: { action: { enum: ['approve', 'reject'] } } });
    const echo = await connect(b, ALICE, 'Echo/0.1');
    expect((await echo.listTools()).tools.map((t) => t.name)).toEqual(['send_message']);
    const answer = await call(echo, 'send_message', { text: 'hello there' });
    expect(answer.content).toEqual([{ type: 'text', text: 'hello there' }]);
    expect(facts(answer)).toMatchObject({ status: 'Completed', output: 'hello there', request_id: expect.any(String) });
    expect(facts(answer)).not.toHaveProperty('task_id');
  });

  it('a turn, then a follow-on by task_id on the other replica: the model sees the history; get_task reads it', async () => {
    llm.script(reply.text('Hello Ada.'), reply.text('Your name is Ada.'));
    const first = await call(await connect(a, ALICE), 'send_message', { text: 'my name is Ada' });
    expect(first.isError).toBeFalsy();
    expect(first.content).toEqual([{ type: 'text', text: 'Hello Ada.' }]);
    const ids = facts(first);
    expect(ids).toMatchObject({ status: 'Completed', task_id: expect.any(String), session_id: expect.any(String), request_id: expect.any(String) });

    const onB = await connect(b, ALICE);
    const second = await call(onB, 'send_message', { text: 'what is my name?', task_id: ids.task_id });
    expect(facts(second)).toMatchObject({ status: 'Completed', task_id: ids.task_id, session_id: ids.session_id, output: 'Your name is Ada.' });
    const seen = llm.requests.at(-1)!.body.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`);
    expect(seen).toEqual(['system: Be brief.', 'user: my name is Ada', 'assistant: Hello Ada.', 'user: what is my name?']);

    const task = facts(await call(onB, 'get_task', { task_id: ids.task_id }));
    expect(task).toMatchObject({ task_id: ids.task_id, status: 'Completed', pending_approvals: [] });
    expect((task.requests as unknown[]).length).toBe(2);
  });

  it('a pause is a result naming the pending calls and the pause id; decide (approve, on the other replica) runs the call', async () => {
    llm.script(reply.toolCalls([tc('w1', 'Notes-wipe', { id: 'a' })]), reply.text('Wiped note a.'));
    const paused = await call(await connect(a, ALICE), 'send_message', { text: 'wipe note a' });
    const pause = facts(paused);
    expect(pause).toMatchObject({
      status: 'Paused',
      pause_id: expect.any(String),
      pending_calls: [{ id: 'w1', name: 'Notes-wipe', arguments: '{"id":"a"}' }],
      decide: { tool: 'decide', arguments: { task_id: pause.task_id, pause_id: pause.pause_id } },
    });
    expect((paused.content[0] as { text: string }).text).toContain(`pause_id "${pause.pause_id}"`);

    const onB = await connect(b, ALICE);
    const done = await call(onB, 'decide', { task_id: pause.task_id, pause_id: pause.pause_id, action: 'approve' });
    expect(facts(done)).toMatchObject({ status: 'Completed', task_id: pause.task_id, request_id: pause.request_id, output: 'Wiped note a.' });
    expect(llm.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'w1', content: 'wiped a' });

    const again = await call(onB, 'decide', { task_id: pause.task_id, pause_id: pause.pause_id, action: 'reject' });
    expect(again.isError).toBe(true);
    expect(facts(again)).toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED', status: 409 });
  });

  it.each([
    ['approve', 'Wiped note b.', { status: 'Completed', output: 'Wiped note b.' }],
    ['reject', null, { status: 'Canceled', reason: 'rejected' }],
  ] as const)('a client that declares elicitation is asked to decide, and its answer (%s) resumes the request', async (decision, text, outcome) => {
    llm.script(reply.toolCalls([tc('w2', 'Notes-wipe', { id: 'b' })]), ...(text ? [reply.text(text)] : []));
    const asked: { message: string; requestedSchema: unknown }[] = [];
    const client = await connect(b, ALICE, 'Guard/1', (params) => {
      asked.push(params);
      return { action: 'accept', content: { decision, reason: 'checked' } };
    });
    const result = await call(client, 'send_message', { text: 'wipe note b' });
    expect(asked).toEqual([
      {
        mode: 'form',
        message: expect.stringContaining('Notes-wipe({"id":"b"})'),
        requestedSchema: expect.objectContaining({
          required: ['decision'],
          properties: expect.objectContaining({ decision: expect.objectContaining({ enum: ['approve', 'reject'] }) }),
        }),
      },
    ]);
    expect(facts(result)).toMatchObject(outcome);
    const task = facts(await call(client, 'get_task', { task_id: facts(result).task_id }));
    expect((task.requests as { approvals: unknown[] }[])[0]!.approvals).toEqual([
      expect.objectContaining({ action: decision, reason: 'checked', decided_by: ALICE.oid }),
    ]);
  });

  it('an elicitation answer that reaches the other replica decides the pause there; the waiting call answers the outcome', async () => {
    llm.script(reply.toolCalls([tc('w5', 'Notes-wipe', { id: 'e' })]), reply.text('Wiped note e.'));
    // A load balancer without affinity: the POST carrying the answer goes to replica b.
    const viaB: typeof fetch = (url, init) => {
      const answer = init?.method === 'POST' && typeof init.body === 'string' && init.body.includes('"ta-decide.');
      return fetch(answer ? String(url).replace(a.url, b.url) : url, init);
    };
    const client = await connect(a, ALICE, 'Guard/1', () => ({ action: 'accept', content: { decision: 'approve' } }), viaB);
    const result = facts(await call(client, 'send_message', { text: 'wipe note e' }));
    expect(result).toMatchObject({ status: 'Completed', output: 'Wiped note e.' });
    expect(llm.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'w5', content: 'wiped e' });
  });

  it('an elicitation the client declines leaves the pause open: the result names it for decide', async () => {
    llm.script(reply.toolCalls([tc('w3', 'Notes-wipe', { id: 'c' })]));
    const client = await connect(a, ALICE, 'Guard/1', () => ({ action: 'decline' }));
    const result = facts(await call(client, 'send_message', { text: 'wipe note c' }));
    expect(result).toMatchObject({ status: 'Paused', pending_calls: [{ id: 'w3' }] });
    const task = facts(await call(client, 'get_task', { task_id: result.task_id }));
    expect(task).toMatchObject({ status: 'Paused', pending_approvals: [{ pause_id: result.pause_id }] });
  });

  it("another user's and another tenant's attempts are refused as on the REST routes (nothing runs)", async () => {
    llm.script(reply.toolCalls([tc('w4', 'Notes-wipe', { id: 'd' })]));
    const pause = facts(await call(await connect(a, ALICE), 'send_message', { text: 'wipe note d' }));
    const bob = await connect(b, BOB);
    const outcome = async (client: Client, name: string, args: Record<string, unknown>) => {
      const r = await call(client, name, args);
      return `${r.isError ? 'error' : 'ok'} ${facts(r).code ?? facts(r).status}`;
    };
    const attempts = async (client: Client) => ({
      read: await outcome(client, 'get_task', { task_id: pause.task_id }),
      decide: await outcome(client, 'decide', { task_id: pause.task_id, pause_id: pause.pause_id, action: 'approve' }),
      followOn: await outcome(client, 'send_message', { text: 'hi', task_id: pause.task_id }),
    });
    expect(await attempts(bob)).toEqual({ read: 'error TASK_NOT_FOUND', decide: 'error NOT_OWNER', followOn: 'error NOT_OWNER' });
    // Another tenant sees nothing; naming the id starts a task of its own (as on REST), leaving Alice's alone.
    llm.script(reply.text('a task of yours'));
    expect(await attempts(await connect(a, CAROL_T2))).toEqual({ read: 'error TASK_NOT_FOUND', decide: 'error TASK_NOT_FOUND', followOn: 'ok Completed' });
    const mine = facts(await call(await connect(b, ALICE), 'get_task', { task_id: pause.task_id }));
    expect(mine).toMatchObject({ status: 'Paused', pending_approvals: [{ pause_id: pause.pause_id }] });
    expect((mine.requests as unknown[]).length).toBe(1);
    expect(llm.requests.filter((r) => JSON.stringify(r.body).includes('wiped d'))).toEqual([]);
  });

  it('without a token: 401 with WWW-Authenticate naming the protected-resource metadata, which names the Entra authority', async () => {
    const res = await fetch(`${a.url}/Guard/1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    const challenge = extractWWWAuthenticateParams(res);
    expect(challenge.resourceMetadataUrl?.href).toBe(`${a.url}/.well-known/oauth-protected-resource/Guard/1/mcp`);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="[^"]+"$/);

    const metadata = await discoverOAuthProtectedResourceMetadata(`${a.url}/Guard/1/mcp`, { resourceMetadataUrl: challenge.resourceMetadataUrl });
    expect(metadata).toEqual({
      resource: `${a.url}/Guard/1/mcp`,
      authorization_servers: [`${issuer.origin}/${DEFAULT_TENANT}/v2.0`],
      scopes_supported: ['api://teal-agent-server/agents.invoke'],
      bearer_methods_supported: ['header'],
      resource_name: 'Guard 1 (MCP)',
    });
    // Found without the header too (the path form, then the root), as the SDK's discovery does.
    expect((await discoverOAuthProtectedResourceMetadata(`${b.url}/Guard/1/mcp`)).resource).toBe(`${b.url}/Guard/1/mcp`);
    const root = await (await fetch(`${a.url}/.well-known/oauth-protected-resource`)).json();
    expect(root).toMatchObject({ resource: `${a.url}/`, authorization_servers: [`${issuer.origin}/${DEFAULT_TENANT}/v2.0`] });

    // A token without the required scope: 403 insufficient_scope, naming the metadata too.
    const scopeless = await fetch(`${a.url}/Guard/1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await issuer.mint({ ...ALICE, scp: 'other' })}` },
      body: '{}',
    });
    expect(scopeless.status).toBe(403);
    expect(scopeless.headers.get('www-authenticate')).toMatch(/^Bearer error="insufficient_scope".*, resource_metadata="[^"]+\/Guard\/1\/mcp"$/);

    // Other routes answer as before: no resource_metadata outside MCP.
    const rest = await fetch(`${a.url}/Guard/1/tasks/x`);
    expect(rest.status).toBe(401);
    expect(rest.headers.get('www-authenticate')).not.toContain('resource_metadata');
  });
});
