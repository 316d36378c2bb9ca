import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { buildOpenApi } from './openapi.builder';

type Op = {
  operationId: string;
  description?: string;
  parameters?: { name: string; in: string }[];
  responses: Record<string, { content?: Record<string, unknown> }>;
};
type Doc = { paths: Record<string, Record<string, Op>> };

describe('openapi.json: reattach to a task stream', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-stream-'));
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: tealagents/v1alpha1\nname: Five\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
  const doc = buildOpenApi(loadAgentConfigs(dir, isKnownLocalModel)[0]!) as Doc;

  it('lists GET /tasks/{task_id}/stream with a description, both ways to give the id, and an event stream', () => {
    const op = doc.paths['/Five/1/tasks/{task_id}/stream']!.get!;
    expect(op.description).toEqual(expect.any(String));
    expect(op.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(['path:task_id', 'query:last_event_id', 'header:Last-Event-ID']);
    expect(Object.keys(op.responses['200']!.content!)).toEqual(['text/event-stream']);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['204', '401', '404', '422']));
  });
});
