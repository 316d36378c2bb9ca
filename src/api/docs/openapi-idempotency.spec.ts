import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { buildOpenApi } from './openapi.builder';

type Op = { parameters?: { name: string; in: string }[]; responses: Record<string, unknown> };
type Doc = { paths: Record<string, Record<string, Op>> };

describe('openapi.json: Idempotency-Key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-idem-'));
  writeFileSync(join(dir, 'a.yaml'), 'apiVersion: tealagents/v1alpha1\nname: Three\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
  const doc = buildOpenApi(loadAgentConfigs(dir, isKnownLocalModel)[0]!) as Doc;
  const takesKey = (op: Op | undefined) => !!op?.parameters?.some((p) => p.name === 'Idempotency-Key' && p.in === 'header');

  it('is a header of every operation that changes state, with its 400 and 422, and of no read', () => {
    const guarded = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => takesKey(op))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    expect(guarded.sort()).toEqual(
      [
        'POST /Three/1',
        'POST /Three/1/sse',
        'POST /Three/1/tealagents/v1alpha1/resume/{request_id}',
        'POST /Three/1/tealagents/v1alpha1/resume/{request_id}/sse',
        'POST /Three/1/tasks/{task_id}/cancel',
        'POST /Three/1/tasks/{task_id}/requests/{request_id}/edit',
        'POST /Three/1/tasks/{task_id}/requests/{request_id}/edit/sse',
        'POST /Three/1/tasks/{task_id}/fork',
        'DELETE /Three/1/tasks/{task_id}',
        'POST /Three/1/ag-ui',
      ].sort(),
    );
    const invoke = doc.paths['/Three/1']!.post!;
    expect(Object.keys(invoke.responses)).toEqual(expect.arrayContaining(['400', '422']));
    expect(JSON.stringify(invoke.responses['422'])).toContain('IDEMPOTENCY_KEY_REUSED');
  });
});
