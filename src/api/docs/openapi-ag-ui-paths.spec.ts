import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { buildOpenApi } from './openapi.builder';

type Op = { operationId: string; description?: string; requestBody?: unknown; responses: Record<string, { content?: Record<string, unknown> }> };
type Doc = { paths: Record<string, Record<string, Op>> };

describe('openapi.json: AG-UI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-ag-ui-'));
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: tealagents/v1alpha1\nname: Five\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
  writeFileSync(join(dir, 'b.yaml'), 'apiVersion: skagents/v2alpha1\nname: Two\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
  const [stateful, stateless] = loadAgentConfigs(dir, isKnownLocalModel).sort((a, b) => a.name.localeCompare(b.name));

  it('lists POST /ag-ui of a stateful agent, with a description, both encodings and the problem answers', () => {
    const doc = buildOpenApi(stateful!.name === 'Five' ? stateful! : stateless!) as Doc;
    const op = doc.paths['/Five/1/ag-ui']!.post!;
    expect(op.operationId).toBe('agUiRun');
    expect(op.description).toMatch(/RunAgentInput/);
    expect(Object.keys(op.responses['200']!.content!)).toEqual(['text/event-stream', 'application/vnd.ag-ui.event+proto']);
    expect(Object.keys(op.responses)).toEqual(['200', '400', '401', '422']);
    expect(JSON.stringify(op.requestBody)).toContain('interruptId');
  });

  it('a stateless agent has no AG-UI route', () => {
    const two = [stateful!, stateless!].find((a) => a.name === 'Two')!;
    expect((buildOpenApi(two) as Doc).paths['/Two/1/ag-ui']).toBeUndefined();
  });
});
