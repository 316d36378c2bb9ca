import type { NestExpressApplication } from '@nestjs/platform-express';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { AgentDefinition } from '../../src/agents/config/agent-definition';
import { createApp } from '../../src/app.factory';
import { EnvConfig, loadEnvConfig } from '../../src/config/env.config';
import type { StateStore } from '../../src/state/state-store';

export interface TestApp {
  app: NestExpressApplication;
  /** `http://127.0.0.1:PORT` of the real listening server. */
  url: string;
  env: EnvConfig;
  agents: AgentDefinition[];
  /** Every JSON log line written so far, parsed. */
  logs: () => Record<string, unknown>[];
  /** Every raw log line written so far. */
  rawLogs: () => string;
  close: () => Promise<void>;
}

export interface TestAppOptions {
  /** A config file or directory; or give `agents` as YAML texts. */
  configPath?: string;
  /** File name → text (agent YAML, or a `custom_plugins.js` beside it), written to a fresh temp directory. */
  agents?: Record<string, string>;
  /** Environment for the app (on top of TA_AUTH_MODE=dev and TA_LOG_LEVEL=info); process.env is NOT read. */
  env?: Record<string, string>;
  /** A store the test holds (to look inside it, or to share it between apps); default: from TA_STATE_STORE. */
  store?: StateStore;
}

/** Writes agent files (YAML, plugins) to a new temporary directory and returns its path. */
export function writeAgentDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-agents-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** Starts the real application (createApp, as production does) on an ephemeral loopback port. */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const env = loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_LOG_LEVEL: 'info', ...options.env });
  const configPath = options.configPath ?? writeAgentDir(options.agents ?? {});
  const { app, agents } = await createApp({ env, configPath, logDestination: destination, store: options.store });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return {
    app,
    url: `http://127.0.0.1:${address.port}`,
    env,
    agents,
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    rawLogs: () => lines.join('\n'),
    close: () => app.close(),
  };
}
