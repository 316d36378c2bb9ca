import { basename, extname, join, resolve } from 'node:path';
import { finalOfSse, postJson, Turn } from './load';
import { freePort } from '../test/support/services';
import { BenchAuth } from './entra-auth';
import { Proc, spawnServer, spawnWithPort } from './processes';
import { StoreEnv } from './stores';

/** The servers the benchmark compares: ours (per state store, dev or Entra auth) and the bare baseline. */
export interface Subject {
  name: string;
  /** Where a turn is posted. */
  url: string;
  turn: Turn<string>;
  /** The same turn streamed (ours: POST …/sse; the baseline: POST /turn/sse), its SSE read to the end. */
  streamTurn?: Turn<string>;
  proc: Proc;
}

/** The subject's streamed turn as a subject of its own (the same process): for the streamed section. */
export function streamedOf(subject: Subject): Subject {
  const { streamTurn } = subject;
  if (!streamTurn) throw new Error(`${subject.name} has no streamed turn`);
  return { ...subject, name: `${subject.name}, streamed`, turn: streamTurn };
}

export interface OursOptions {
  /** Node flags before the script (--cpu-prof …). */
  nodeArgs?: string[];
  /** Replaces the store's env (a counting endpoint). */
  env?: Record<string, string>;
  /** Entra ID instead of dev auth: its env on top, its headers on every turn. */
  auth?: BenchAuth;
  /** More env on top of the store's (or `env`): the audit archive's (bench/archive.ts). */
  extraEnv?: Record<string, string>;
  /** Shown beside the subject's name ("archive"). */
  variant?: string;
}

/** The repository: two up from dist-bench/bench (npm run bench), one up from bench/ (the tests, from source). */
const ROOT = resolve(__dirname, basename(resolve(__dirname, '..')) === 'dist-bench' ? '../..' : '..');

/** Our server as shipped for dev: dev auth (unless `auth` says otherwise), telemetry, validation and info logging on. */
export async function startOurs(storeEnv: StoreEnv, modelUrl: string, options: OursOptions = {}): Promise<Subject> {
  const { nodeArgs = [], env = storeEnv.env, auth, extraEnv, variant } = options;
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
      ...extraEnv,
      ...auth?.env,
    },
    `${base}/health/live`,
    nodeArgs,
  );
  const item = [{ content_type: 'text', content: 'hello' }];
  return {
    name: `ours (${[storeEnv.name, auth?.name, variant].filter(Boolean).join(', ')})`,
    url: base,
    proc,
    turn: async (taskId) => (await postJson<{ task_id: string }>(base, taskId ? { task_id: taskId, items: item } : { items: item }, auth?.headers())).task_id,
    // The final-response event carries the task id, as the plain answer does.
    streamTurn: async (taskId) =>
      (await finalOfSse(`${base}/sse`, taskId ? { task_id: taskId, items: item } : { items: item }, auth?.headers())).task_id as string,
  };
}

/**
 * The bare baseline: histories in a Map, or with `env` (a StoreEnv's baselineEnv) in that store,
 * the same-store baseline. `BASELINE_KEY_PREFIX` in `env` names its keys (else one per process).
 * It calls the model over keep-alive node:http; with BASELINE_MODEL_CLIENT=fetch in `env`, with
 * global fetch (the `baseline (fetch)` neighbour, information).
 */
export async function startBaseline(modelUrl: string, env: Record<string, string> = {}): Promise<Subject> {
  // baseline.server.js beside the compiled bench; from source (the tests) the .ts, which Node 24 runs.
  const proc = await spawnWithPort(join(__dirname, `baseline.server${extname(__filename)}`), { MODEL_URL: modelUrl, ...env });
  const url = `http://127.0.0.1:${proc.port}/turn`;
  const variant = [env.BASELINE_STORE, env.BASELINE_MODEL_CLIENT === 'fetch' ? 'fetch' : undefined].filter(Boolean).join(', ');
  return {
    name: variant ? `baseline (${variant})` : 'baseline',
    url,
    proc,
    turn: async (id) => (await postJson<{ conversation_id: string }>(url, { conversation_id: id, text: 'hello' })).conversation_id,
    streamTurn: async (id) => (await finalOfSse(`${url}/sse`, { conversation_id: id, text: 'hello' })).conversation_id as string,
  };
}
