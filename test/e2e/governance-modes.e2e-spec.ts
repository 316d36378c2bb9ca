/**
 * The two approval modes over real HTTP with real plugins and upstream's plugin catalog file
 * (TA_PLUGIN_CATALOG_FILE); only the model vendor is fake.
 * - No `spec.governance`: as upstream. A v3 call waits only when its tool is declared
 *   `requires_hitl: true` (the catalog, or the plugin's own declaration); a tool nobody declares
 *   runs, whatever its risk; v1 (Chat, Sequential) and v2 agents run every tool.
 * - With `spec.governance` (even empty): autonomy level, risks, plans, fail closed (the rest of
 *   that mode is covered by v3-approvals.e2e-spec.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { postJson } from '../support/http';
import { openSse, parseSse } from '../support/sse-reader';
import { startTestApp, TestApp, writeAgentDir } from '../support/test-app';

interface GovState {
  calls: Record<string, number>;
}
const gov: GovState = ((globalThis as { __gov?: GovState }).__gov = { calls: {} });

// read: read_only; wipe: no declared risk (write_high_risk); zap: requires_hitl in the catalog only;
// stamp: requires_hitl in the plugin's own declaration.
const OPS_PLUGIN = `
const count = (name) => { const c = globalThis.__gov.calls; c[name] = (c[name] ?? 0) + 1; };
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Ops', tools: [
  { name: 'read', description: 'Reads', parameters: id, risk: 'read_only', handler: ({ id }) => { count('read'); return 'read ' + id; } },
  { name: 'wipe', description: 'Wipes', parameters: id, handler: ({ id }) => { count('wipe'); return 'wiped ' + id; } },
  { name: 'zap', description: 'Zaps', parameters: id, handler: ({ id }) => { count('zap'); return 'zapped ' + id; } },
  { name: 'stamp', description: 'Stamps', parameters: id, requires_hitl: true, handler: ({ id }) => { count('stamp'); return 'stamped ' + id; } },
] }];
`;

/** Upstream's catalog format (plugin_catalog/models.py). */
const CATALOG = {
  plugins: [
    {
      plugin_id: 'Ops',
      name: 'Ops',
      description: 'Operations',
      version: '1.0',
      owner: 'system',
      plugin_type: { type_name: 'code' },
      tools: [
        { tool_id: 'Ops-zap', name: 'zap', description: 'Zaps', governance: { requires_hitl: true, cost: 'high', data_sensitivity: 'sensitive' }, auth: null },
        { tool_id: 'Ops-read', name: 'read', description: 'Reads', governance: { requires_hitl: false, cost: 'low', data_sensitivity: 'public' }, auth: null },
      ],
    },
  ],
};

const agentSpec = `  agent:
    name: default
    model: gpt-test
    system_prompt: Operate.
    plugins: [Ops]
`;
const v3 = (name: string, governance = '') => `apiVersion: tealagents/v1alpha1
kind: Chat
name: ${name}
version: 1
description: governance modes
spec:
${governance}${agentSpec}`;
const v2 = (name: string, governance = '') => `apiVersion: skagents/v2alpha1
kind: Agent
name: ${name}
version: 1
metadata:
  description: governance modes
  skills: []
spec:
${governance}${agentSpec}`;
const V1_CHAT = `apiVersion: skagents/v1
kind: Chat
description: governance modes
service_name: OpenChat
version: 1
input_type: BaseInput
spec:
${agentSpec}`;
const V1_SEQUENTIAL = `apiVersion: skagents/v1
kind: Sequential
description: governance modes
service_name: OpenSeq
version: 1
input_type: BaseInputWithUserContext
spec:
  agents:
    - name: default
      role: Default Agent
      model: gpt-test
      system_prompt: Operate.
      plugins: [Ops]
  tasks:
    - name: act
      task_no: 1
      description: Act
      instructions: Act for {{user_context["User Location"]}}.
      agent: default
`;
const GOVERNED = '  governance: {}\n';

const tc = (id: string, name: string) => ({ id, name, arguments: JSON.stringify({ id: id }) });
const items = (content: string) => ({ items: [{ content_type: 'text', content }] });

describe('approvals without spec.governance (as upstream) and with it', () => {
  let llm: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    const dir = writeAgentDir({
      'open.yaml': v3('Open'),
      'governed.yaml': v3('Governed', GOVERNED),
      'open-v2.yaml': v2('OpenV2'),
      'governed-v2.yaml': v2('GovernedV2', GOVERNED),
      'open-chat.yaml': V1_CHAT,
      'open-seq.yaml': V1_SEQUENTIAL,
    });
    writeFileSync(join(dir, 'custom_plugins.js'), OPS_PLUGIN);
    const catalog = join(dir, 'catalog.json');
    writeFileSync(catalog, JSON.stringify(CATALOG));
    t = await startTestApp({
      configPath: dir,
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_PLUGIN_CATALOG_FILE: catalog },
    });
  });
  afterAll(async () => {
    await t?.close();
    await llm?.close();
  });
  beforeEach(() => (gov.calls = {}));
  afterEach(() => expect(llm.pending()).toBe(0));

  const toolResults = () =>
    llm.requests
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content);

  describe('no spec.governance, v3', () => {
    it('a tool the catalog marks requires_hitl pauses; in the same turn, tools nobody declares need no approval and there is no plan', async () => {
      llm.script(reply.toolCalls([tc('r1', 'Ops-read'), tc('w1', 'Ops-wipe'), tc('z1', 'Ops-zap')], { text: 'On it.' }));
      const paused = await postJson(`${t.url}/Open/1`, items('do it'));
      expect(paused.status).toBe(200);
      expect(paused.body.status).toBe('Paused');
      // only the catalog's requires_hitl call waits; three calls are no plan (upstream has none)
      expect(paused.body.content.tool_calls).toMatchObject([{ id: 'z1', name: 'Ops-zap', approval_reason: 'requires_hitl' }]);
      expect(paused.body.content.tool_calls).toHaveLength(1);
      expect(paused.body.content.plan).toBe(false);
      expect(paused.body.content.autonomy_level ?? null).toBeNull();
      expect(gov.calls).toEqual({});

      llm.script(reply.text('All done.'));
      const done = await postJson(`${t.url}/Open/1/tealagents/v1alpha1/resume/${paused.body.request_id}`, { action: 'approve' });
      expect(done.status).toBe(200);
      expect(done.body.status).toBe('Completed');
      expect(gov.calls).toEqual({ read: 1, wipe: 1, zap: 1 });
      expect(toolResults()).toEqual(['read r1', 'wiped w1', 'zapped z1']);
    });

    it('a tool nobody declares (no risk, not in the catalog) runs at once, as upstream', async () => {
      llm.script(reply.toolCalls([tc('w1', 'Ops-wipe'), tc('r1', 'Ops-read')]), reply.text('wiped'));
      const res = await postJson(`${t.url}/Open/1`, items('wipe it'));
      expect(res.body).toMatchObject({ status: 'Completed', content: { output: 'wiped' } });
      expect(gov.calls).toEqual({ wipe: 1, read: 1 });
      expect(toolResults()).toEqual(['wiped w1', 'read r1']);
    });

    it("a plugin's own requires_hitl declaration asks too (it plays the catalog's part)", async () => {
      llm.script(reply.toolCalls([tc('s1', 'Ops-stamp')]));
      const paused = await postJson(`${t.url}/Open/1`, items('stamp it'));
      expect(paused.body.status).toBe('Paused');
      expect(paused.body.content.tool_calls).toMatchObject([{ id: 's1', approval_reason: 'requires_hitl' }]);
      const rejected = await postJson(`${t.url}/Open/1/tealagents/v1alpha1/resume/${paused.body.request_id}`, { action: 'reject' });
      expect(rejected.status).toBe(200);
      expect(gov.calls).toEqual({});
    });
  });

  describe('no spec.governance, v1 and v2: every tool runs, even one the catalog marks requires_hitl', () => {
    const turn = () => reply.toolCalls([tc('z1', 'Ops-zap'), tc('s1', 'Ops-stamp'), tc('w1', 'Ops-wipe')]);

    it('v2 (JSON and SSE)', async () => {
      llm.script(turn(), reply.text('done'));
      const res = await postJson(`${t.url}/OpenV2/1`, { chat_history: [{ role: 'user', items: [{ content_type: 'text', content: 'go' }] }] });
      expect(res.status).toBe(200);
      expect(res.body.output_raw).toBe('done');
      expect(toolResults()).toEqual(['zapped z1', 'stamped s1', 'wiped w1']);

      llm.script(turn(), reply.chunks(['do', 'ne']));
      const stream = await openSse(`${t.url}/OpenV2/1/sse`, { chat_history: [{ role: 'user', content: 'go' }] });
      const events = parseSse(await stream.readAll()).filter((e) => e.event);
      expect(JSON.parse(events.at(-1)!.data).output_raw).toBe('done');
      expect(gov.calls).toEqual({ zap: 2, stamp: 2, wipe: 2 });
    });

    it('v1 Chat', async () => {
      llm.script(turn(), reply.text('done'));
      const res = await postJson(`${t.url}/OpenChat/1`, { chat_history: [{ role: 'user', content: 'go' }] });
      expect(res.status).toBe(200);
      expect(res.body.output_raw).toBe('done');
      expect(gov.calls).toEqual({ zap: 1, stamp: 1, wipe: 1 });
    });

    it('v1 Sequential', async () => {
      llm.script(turn(), reply.text('done'));
      const res = await postJson(`${t.url}/OpenSeq/1`, { chat_history: [{ role: 'user', content: 'go' }], user_context: { 'User Location': 'Oslo' } });
      expect(res.status).toBe(200);
      expect(res.body.output_raw).toBe('done');
      expect(gov.calls).toEqual({ zap: 1, stamp: 1, wipe: 1 });
    });
  });

  describe('with spec.governance (even empty): our policy, fail closed', () => {
    it('v3: the tool nobody declares is write_high_risk and pauses under the default L1; a 3-call turn is a plan', async () => {
      llm.script(reply.toolCalls([tc('r1', 'Ops-read'), tc('w1', 'Ops-wipe'), tc('z1', 'Ops-zap')]));
      const paused = await postJson(`${t.url}/Governed/1`, items('do it'));
      expect(paused.body.status).toBe('Paused');
      expect(paused.body.content.plan).toBe(true);
      expect(paused.body.content.autonomy_level).toBe('L1');
      expect(paused.body.content.tool_calls).toMatchObject([
        { id: 'r1', approval_reason: 'plan' },
        { id: 'w1', risk: 'write_high_risk', approval_reason: 'autonomy_level' },
        { id: 'z1', approval_reason: 'requires_hitl' },
      ]);
      await postJson(`${t.url}/Governed/1/tealagents/v1alpha1/resume/${paused.body.request_id}`, { action: 'reject' });
      expect(gov.calls).toEqual({});
    });

    it('v2: calls that need approval do not run; the model is told why', async () => {
      llm.script(reply.toolCalls([tc('r1', 'Ops-read'), tc('z1', 'Ops-zap')]), reply.text('could not'));
      const res = await postJson(`${t.url}/GovernedV2/1`, { chat_history: [{ role: 'user', content: 'go' }] });
      expect(res.body.output_raw).toBe('could not');
      expect(gov.calls).toEqual({ read: 1 });
      expect(toolResults()).toEqual(['read r1', expect.stringMatching(/^Error: Ops-zap needs a human's approval/)]);
    });
  });
});
