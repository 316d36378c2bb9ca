import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentDefinition } from './agent-definition';
import { ConfigError } from './config-error';
import { loadAgentConfigs } from './load-agent-configs';

/** Test helpers of the config specs (kept out of the build by tsconfig.build.json). */

/** Writes files (name → text; `sub/x.yaml` makes a subdirectory) to a fresh directory. */
export function writeConfigDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ta-config-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

export function loadConfigFiles(files: Record<string, string>): AgentDefinition[] {
  return loadAgentConfigs(writeConfigDir(files));
}

/** The problems for a set of files, with the temporary directory cut from the front. */
export function configProblems(files: Record<string, string>): string[] {
  const dir = writeConfigDir(files);
  try {
    loadAgentConfigs(dir);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.problems.map((p) => p.split(`${dir}/`).join(''));
  }
  throw new Error('expected a ConfigError');
}
