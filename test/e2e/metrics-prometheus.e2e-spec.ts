import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';
import { request } from '../support/http';
import { McpTestServer, startMcpTestServer } from '../support/mcp-test-server';
import { parsePrometheusText, PromFamily, samples, total } from '../support/prometheus-text';
import { startTestApp, TestApp } from '../support/test-app';
import { v3Client } from '../support/v3-client';

const agent = (name: string, mcpUrl: string, governance = '') => `
apiVersion: tealagents/v1alpha1
name: ${name}
version: 1
description: Metrics e2e
spec:
${governance}
  agent:
    name: default
    model: gpt-test
    mcp_servers:
      - name: test
        transport: http
        url: ${mcpUrl}
`;

const tc = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

describe('GET /metrics with TA_METRICS_PROMETHEUS=true (real app, fake model, real MCP server)', () => {
  let llm: FakeOpenAi;
  let mcp: McpTestServer;
  let t: TestApp;

  beforeAll(async () => {
    llm = await startFakeOpenAi();
    mcp = await startMcpTestServer();
    t = await startTestApp({
      agents: {
        'metered.yaml': agent('Metered', mcp.url),
        // L0: every tool call waits for a human, so a request pauses.
        'strict.yaml': agent('Strict', mcp.url, '  governance:\n    autonomy_level: L0'),
      },
      env: { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', TA_METRICS_PROMETHEUS: 'true' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await mcp?.stop();
    await llm?.close();
  });

  async function scrape(): Promise<Map<string, PromFamily>> {
    const res = await request(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    return parsePrometheusText(res.text);
  }

  it('counts requests, latencies, tokens and tool calls exactly as made, with Prometheus types', async () => {
    const api = v3Client(`${t.url}/Metered/1`);
    const N = 3;
    for (let i = 0; i < N; i++) {
      llm.script(
        reply.toolCalls([tc(`c${i}`, 'test-echo', { text: `hi ${i}` })], { usage: { prompt_tokens: 10, completion_tokens: 2 } }),
        reply.text(`done ${i}`, { usage: { prompt_tokens: 20, completion_tokens: 5 } }),
      );
      const res = await api.say(`echo ${i}`);
      expect(res.status).toBe(200);
      expect(res.body.content.output).toBe(`done ${i}`);
    }
    const m = await scrape();
    const route = { http_request_method: 'POST', http_route: '/Metered/1', http_response_status_code: '200' };

    expect(m.get('ta_http_server_requests_total')?.type).toBe('counter');
    expect(total(m, 'ta_http_server_requests_total', 'ta_http_server_requests_total', route)).toBe(N);

    expect(m.get('http_server_request_duration')?.type).toBe('histogram');
    expect(total(m, 'http_server_request_duration', 'http_server_request_duration_count', route)).toBe(N);
    const buckets = samples(m, 'http_server_request_duration', 'http_server_request_duration_bucket', route);
    expect(buckets.at(-1)).toMatchObject({ labels: expect.objectContaining({ le: '+Inf' }), value: N });
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b)); // cumulative
    expect(buckets.map((b) => b.labels.le)).toEqual(expect.arrayContaining(['0.005', '0.25', '1', '60'])); // seconds, not ms bounds
    expect(total(m, 'http_server_request_duration', 'http_server_request_duration_sum', route)).toBeGreaterThan(0);

    const agentOk = { ta_agent_name: 'Metered', outcome: 'ok' };
    expect(m.get('ta_agent_invocations_total')?.type).toBe('counter');
    expect(total(m, 'ta_agent_invocations_total', 'ta_agent_invocations_total', agentOk)).toBe(N);
    expect(total(m, 'ta_agent_invocation_duration', 'ta_agent_invocation_duration_count', agentOk)).toBe(N);

    // Two model calls per request: 10 + 20 input tokens and 2 + 5 output tokens.
    const metered = { ta_agent_name: 'Metered' };
    expect(m.get('ta_llm_tokens_total')?.type).toBe('counter');
    expect(total(m, 'ta_llm_tokens_total', 'ta_llm_tokens_total', { ...metered, gen_ai_token_type: 'input' })).toBe(N * 30);
    expect(total(m, 'ta_llm_tokens_total', 'ta_llm_tokens_total', { ...metered, gen_ai_token_type: 'output' })).toBe(N * 7);
    expect(total(m, 'gen_ai_client_token_usage', 'gen_ai_client_token_usage_sum', { ...metered, gen_ai_token_type: 'input' })).toBe(N * 30);

    const echo = { gen_ai_tool_name: 'test-echo', ta_tool_outcome: 'ok' };
    expect(m.get('ta_tool_calls_total')?.type).toBe('counter');
    expect(total(m, 'ta_tool_calls_total', 'ta_tool_calls_total', echo)).toBe(N);
    expect(m.get('ta_tool_duration')?.type).toBe('histogram');
    expect(total(m, 'ta_tool_duration', 'ta_tool_duration_count', echo)).toBe(N);
    expect(mcp.calls.filter((c) => c.tool === 'echo')).toHaveLength(N);

    expect(m.get('ta_requests_running')?.type).toBe('gauge');
    expect(total(m, 'ta_requests_running', 'ta_requests_running')).toBe(0);
    // Nothing failed or was refused: the series exist, at 0.
    expect(samples(m, 'ta_state_store_errors_total', 'ta_state_store_errors_total')).toHaveLength(2);
    expect(total(m, 'ta_state_store_errors_total', 'ta_state_store_errors_total')).toBe(0);
    expect(m.get('ta_rate_limited_total')?.type).toBe('counter');
    expect(
      samples(m, 'ta_rate_limited_total', 'ta_rate_limited_total')
        .map((s) => s.labels.ta_limit)
        .sort(),
    ).toEqual(['concurrent_per_caller', 'requests_per_agent', 'requests_per_caller', 'tokens_per_caller']);
    expect(total(m, 'ta_rate_limited_total', 'ta_rate_limited_total')).toBe(0);
  });

  it('counts a request while it runs, and a pause until it is decided', async () => {
    const api = v3Client(`${t.url}/Strict/1`);
    let release!: () => void;
    llm.script(reply.toolCalls([tc('w1', 'test-echo', { text: 'wait' })], { until: new Promise<void>((r) => (release = r)) }));
    const pending = api.say('echo, after approval');
    for (let i = 0; i < 100 && llm.pending() === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(total(await scrape(), 'ta_requests_running', 'ta_requests_running')).toBe(1);
    release();
    const paused = await pending;
    expect(paused.body.status).toBe('Paused');

    let m = await scrape();
    expect(m.get('ta_approvals_pending')?.type).toBe('gauge'); // an UpDownCounter is a gauge to Prometheus
    expect(total(m, 'ta_approvals_pending', 'ta_approvals_pending')).toBe(1);
    expect(total(m, 'ta_requests_running', 'ta_requests_running')).toBe(0);
    expect(total(m, 'ta_agent_invocations_total', 'ta_agent_invocations_total', { ta_agent_name: 'Strict', outcome: 'paused' })).toBe(1);

    llm.script(reply.text('echoed'));
    const done = await request(`${t.url}${paused.body.content.approval_url}`, { method: 'POST', body: {} });
    expect(done.status).toBe(200);
    m = await scrape();
    expect(total(m, 'ta_approvals_pending', 'ta_approvals_pending')).toBe(0);
  });

  it('is not an agent route: open without a token, and in no openapi.json', async () => {
    const doc = await request(`${t.url}/Metered/1/openapi.json`);
    expect(Object.keys(doc.body.paths).some((p) => p.includes('metrics'))).toBe(false);
  });
});

describe('GET /metrics without TA_METRICS_PROMETHEUS', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      agents: {
        'echo.yaml': 'apiVersion: tealagents/v1alpha1\nname: Echo\nversion: 1\ndescription: e\nspec:\n  agent:\n    name: default\n    model: local/echo\n',
      },
    });
  });
  afterAll(() => t?.close());

  it('is a 404', async () => {
    expect((await request(`${t.url}/metrics`)).status).toBe(404);
  });
});
