import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { buildOpenApi } from './openapi.builder';

type Doc = {
  openapi: string;
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, { description?: string; operationId: string; requestBody?: unknown; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown> };
};

/** Loads one agent from YAML text through the real config loader. */
function agentFrom(yaml: string): AgentDefinition {
  const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-'));
  writeFileSync(join(dir, 'agent.yaml'), yaml);
  const [agent] = loadAgentConfigs(dir, isKnownLocalModel);
  return agent!;
}

const spec = `spec:
  agent:
    name: default
    model: local/echo
`;
const v2 = (head: string) => agentFrom(`apiVersion: skagents/v2alpha1\nkind: Agent\nname: Two\nversion: 0.1\n${head}\n${spec}`);
const v3 = agentFrom(`apiVersion: tealagents/v1alpha1\nkind: Agent\nname: Three\nversion: 1.0\ndescription: A stateful agent\n${spec}`);
const v1 = agentFrom(`apiVersion: skagents/v1\nkind: Chat\nservice_name: One\nversion: 2\ninput_type: BaseMultiModalInput\n${spec}`);

/** Every `$ref` in the document, wherever it is. */
function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

describe('buildOpenApi', () => {
  describe('the orchestrator contract: first path is POST "" and its description is the agent description', () => {
    it.each([
      ['metadata.description wins over description', 'description: top\nmetadata:\n  description: from metadata', 'from metadata'],
      ['description when there is no metadata', 'description: from the top level', 'from the top level'],
      ['"{name} API" when neither is given', '', 'Two API'],
    ])('%s', (_label, head, expected) => {
      const doc = buildOpenApi(v2(head)) as Doc;
      const [first, item] = Object.entries(doc.paths)[0]!;
      expect(first).toBe('/Two/0.1');
      expect(Object.keys(item)).toEqual(['post']);
      expect(item.post!.description).toBe(expected);
      expect(doc.paths['/Two/0.1/sse']!.post!.description).toBe(`${expected}\nInitiate SSE call`);
      expect(doc.info.description).toBe(expected);
    });

    it.each([
      ['v1', v1, '/One/2'],
      ['v3', v3, '/Three/1.0'],
    ])('holds for %s agents too', (_m, agent, prefix) => {
      const doc = buildOpenApi(agent) as Doc;
      expect(Object.keys(doc.paths)[0]).toBe(prefix);
      expect(Object.values(doc.paths)[0]!.post!.description).toBe(agent.description);
    });
  });

  it('documents the stateless routes of a v1/v2 agent, and no stateful ones', () => {
    const doc = buildOpenApi(v2('')) as Doc;
    expect(Object.keys(doc.paths)).toEqual(['/Two/0.1', '/Two/0.1/sse', '/Two/0.1/health', '/Two/0.1/health/live', '/Two/0.1/health/ready']);
    expect(JSON.stringify(doc.paths['/Two/0.1']!.post!.requestBody)).toContain('#/components/schemas/BaseMultiModalInput');
    expect(JSON.stringify(doc.paths['/Two/0.1']!.post!.responses['200'])).toContain('#/components/schemas/InvokeResponse');
    expect(doc.paths['/Two/0.1']!.post!.responses['404']).toBeUndefined();
  });

  it('documents the stateful routes of a v3 agent with their bodies', () => {
    const doc = buildOpenApi(v3) as Doc;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/Three/1.0/tealagents/v1alpha1/resume/{request_id}',
        '/Three/1.0/tealagents/v1alpha1/resume/{request_id}/sse',
        '/Three/1.0/tasks/{task_id}',
        '/Three/1.0/tasks/{task_id}/cancel',
        '/Three/1.0/sessions/{session_id}',
      ]),
    );
    expect(JSON.stringify(doc.paths['/Three/1.0']!.post!.requestBody)).toContain('#/components/schemas/UserMessage');
    expect(JSON.stringify(doc.paths['/Three/1.0']!.post!.responses['200'])).toContain('#/components/schemas/StateResponse');
    expect(Object.keys(doc.paths['/Three/1.0']!.post!.responses)).toEqual(expect.arrayContaining(['404', '409', '503']));
  });

  it.each([
    ['v1', v1],
    ['v2', v2('')],
    ['v3', v3],
  ])('%s: every $ref resolves, operation ids are unique, every path is under the prefix', (_m, agent) => {
    const doc = buildOpenApi(agent) as Doc;
    for (const ref of refs(doc)) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas).toHaveProperty(ref.split('/').at(-1)!);
    }
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    for (const path of Object.keys(doc.paths)) expect(path.startsWith(agent.prefix)).toBe(true);
  });

  it('describes errors as application/problem+json', () => {
    const doc = buildOpenApi(v2('')) as Doc;
    const responses = doc.paths['/Two/0.1']!.post!.responses as Record<string, { content: Record<string, unknown> }>;
    for (const status of ['401', '403', '413', '415', '422', '429', '502', '504']) {
      expect(Object.keys(responses[status]!.content)).toEqual(['application/problem+json']);
    }
  });

  it('keeps the version a string and names the agent in info', () => {
    const doc = buildOpenApi(v3) as Doc;
    expect(doc.openapi).toBe('3.0.3');
    expect(doc.info).toMatchObject({ title: 'Three', version: '1.0' });
    expect(buildOpenApi(v1)).toMatchObject({ info: { title: 'One', version: '2' } });
  });
});
