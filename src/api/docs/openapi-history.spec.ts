import 'reflect-metadata';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../../agents/config/load-agent-configs';
import { isKnownLocalModel } from '../../llm/local/local-models';
import { deliveryView } from '../../tasks/views/delivery-view';
import { buildOpenApi } from './openapi.builder';

type Schema = { $ref?: string; properties?: Record<string, Schema>; items?: Schema; description?: string };
type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: Schema }> }> }>>;
  components: { schemas: Record<string, Schema> };
};

describe('openapi.json: what the model received, per request', () => {
  it('documents the task read with each request and its history fields', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-openapi-history-'));
    writeFileSync(join(dir, 'a.yaml'), 'apiVersion: tealagents/v1alpha1\nname: Three\nversion: 1\nspec:\n  agent:\n    name: default\n    model: local/echo\n');
    const doc = buildOpenApi(loadAgentConfigs(dir, isKnownLocalModel)[0]!) as Doc;
    const schema = doc.paths['/Three/1/tasks/{task_id}']!.get!.responses['200']!.content['application/json']!.schema;
    expect(schema.$ref).toBe('#/components/schemas/Task');
    expect(doc.components.schemas.Task!.properties!.requests!.items!.$ref).toBe('#/components/schemas/TaskRequest');
    expect(Object.keys(doc.components.schemas.TaskRequest!.properties!)).toEqual(
      expect.arrayContaining(['request_id', 'status', 'model_input_messages', 'history_truncated', 'history_omitted_messages', 'history_summarized']),
    );
    // Each request's webhook deliveries, present only when it has some: the schema names what the view gives.
    expect(doc.components.schemas.TaskRequest!.properties!.webhooks!.items!.$ref).toBe('#/components/schemas/RequestWebhook');
    const view = deliveryView({
      id: 'msg_1',
      event: 'approval.required',
      requestId: 'r',
      url: 'https://h.example/',
      secretEnv: 'S',
      createdAt: 0,
      attempts: 0,
      dueAt: 0,
    });
    expect(Object.keys(doc.components.schemas.RequestWebhook!.properties!)).toEqual(Object.keys(view));
  });
});
