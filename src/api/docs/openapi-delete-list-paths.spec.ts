import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { buildOpenApi } from './openapi.builder';

type Op = { operationId: string; description?: string; parameters?: { name: string; in: string }[]; responses: Record<string, unknown> };
type Doc = { paths: Record<string, Record<string, Op>> };

describe('openapi.json: delete and session listing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-delete-'));
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: tealagents/v1alpha1\nname: Four\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
  const doc = buildOpenApi(loadAgentConfigs(dir, isKnownLocalModel)[0]!) as Doc;

  it('lists DELETE of a task and of a session (204, 404), and GET /sessions, each with a description', () => {
    const deleteTask = doc.paths['/Four/1/tasks/{task_id}']!.delete!;
    const deleteSession = doc.paths['/Four/1/sessions/{session_id}']!.delete!;
    const listSessions = doc.paths['/Four/1/sessions']!.get!;
    for (const op of [deleteTask, deleteSession, listSessions]) expect(op.description).toEqual(expect.any(String));
    for (const op of [deleteTask, deleteSession]) expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['204', '404']));
    expect(listSessions.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(['query:limit', 'query:cursor']);
    expect(JSON.stringify(listSessions.responses['200'])).toContain('last_activity_at');
    // The read routes stay where they were.
    expect(doc.paths['/Four/1/tasks/{task_id}']!.get!.operationId).toBe('getTask');
    expect(doc.paths['/Four/1/sessions/{session_id}']!.get!.operationId).toBe('getSession');
  });
});
