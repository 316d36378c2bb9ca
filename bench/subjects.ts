import { join } from 'node:path';
import { postJson, Turn } from './load';
import { freePort } from '../test/support/services';
import { Proc, spawnServer, spawnWithPort } from './processes';
import { StoreEnv } from './stores';

/** The two servers the benchmark compares: ours (per state store) and the bare baseline. */
export interface Subject {
  name: string;
  turn: Turn<string>;
  proc: Proc;
}

const ROOT = join(__dirname, '..', '..');

/** Our server as shipped for dev: dev auth, telemetry, validation and info logging on. */
export async function startOurs(storeEnv: StoreEnv, modelUrl: string, nodeArgs: string[] = [], env: Record<string, string> = storeEnv.env): Promise<Subject> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/Bench/1`;
  const proc = await spawnServer(
    [join(ROOT, 'dist', 'cli.js'), 'serve', join(ROOT, 'bench', 'agents'), '--port', String(port)],
    {
      TA_AUTH_MODE: 'dev',
      TA_HOST: '127.0.0.1',
      TA_BASE_URL: `${modelUrl}/v1`,
      TA_API_KEY: 'bench',
      TA_LOG_LEVEL: 'info',
      ...env,
    },
    `${base}/health/live`,
    nodeArgs,
  );
  const item = [{ content_type: 'text', content: 'hello' }];
  return {
    name: `ours (${storeEnv.name})`,
    proc,
    turn: async (taskId) => (await postJson<{ task_id: string }>(base, taskId ? { task_id: taskId, items: item } : { items: item })).task_id,
  };
}

export async function startBaseline(modelUrl: string): Promise<Subject> {
  const proc = await spawnWithPort(join(__dirname, 'baseline.server.js'), { MODEL_URL: modelUrl });
  const url = `http://127.0.0.1:${proc.port}/turn`;
  return {
    name: 'baseline',
    proc,
    turn: async (id) => (await postJson<{ conversation_id: string }>(url, { conversation_id: id, text: 'hello' })).conversation_id,
  };
}
