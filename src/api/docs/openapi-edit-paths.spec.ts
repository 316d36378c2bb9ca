import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { buildOpenApi } from './openapi.builder';

type Op = { operationId: string; description?: string; parameters?: { name: string; in: string }[]; responses: Record<string, unknown> };
type Doc = { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };

describe('openapi.json: edit and fork', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-edit-'));
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: tealagents/v1alpha1\nname: Three\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
  const doc = buildOpenApi(loadAgentConfigs(dir, isKnownLocalModel)[0]!) as Doc;

  it('lists edit, its /sse and fork, each with a description and its answer', () => {
    const edit = doc.paths['/Three/1/tasks/{task_id}/requests/{request_id}/edit']!.post!;
    const editSse = doc.paths['/Three/1/tasks/{task_id}/requests/{request_id}/edit/sse']!.post!;
    const fork = doc.paths['/Three/1/tasks/{task_id}/fork']!.post!;
    for (const op of [edit, editSse, fork]) expect(op.description).toEqual(expect.any(String));
    expect(edit.parameters!.map((p) => p.name)).toEqual(['task_id', 'request_id', 'Idempotency-Key']);
    expect(JSON.stringify(edit.responses['200'])).toContain('#/components/schemas/StateResponse');
    expect(Object.keys(edit.responses)).toEqual(expect.arrayContaining(['404', '409', '422']));
    expect(JSON.stringify(editSse.responses['200'])).toContain('text/event-stream');
    expect(JSON.stringify(fork.responses['201'])).toContain('#/components/schemas/Task');
  });

  it('documents ?include=superseded on the task read, and edit_of / superseded_by per request', () => {
    const getTask = doc.paths['/Three/1/tasks/{task_id}']!.get!;
    expect(getTask.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'include', in: 'query' })]));
    expect(Object.keys(doc.components.schemas.TaskRequest!.properties!)).toEqual(expect.arrayContaining(['edit_of', 'superseded_by']));
  });
});
