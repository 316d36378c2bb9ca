#!/usr/bin/env node
// Boots the built server on each of upstream teal-agents' example configs and says which boot
// (docs/upstream-examples.md). Usage, from the repository root, after `npx tsc -p tsconfig.build.json`:
//
//   node scripts/upstream-examples.mjs <upstream work tree>
//
// The configs: every YAML file of the tree whose top-level `apiVersion` is skagents/* or
// tealagents/* (Dapr components and CI files are not configs). Orchestrator configs (kind
// *Orchestrator) are for upstream's orchestrator services, not agents: listed, not booted. Each
// other one is served alone (`teal-agent-server serve <file> --port 0`, dev auth, a model URL that
// is never called) and reported as `boots` once the server logs that it listens, else with the
// first line of the boot's error. Set TA_PYTHON to run Python plugins with another interpreter.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const BOOT_TIMEOUT_MS = 30_000;
const root = process.argv[2] && resolve(process.argv[2]);
if (!root) {
  process.stderr.write('usage: node scripts/upstream-examples.mjs <upstream work tree>\n');
  process.exit(2);
}
const cli = resolve(dirname(new URL(import.meta.url).pathname), '..', 'bin', 'teal-agent-server.js');

/**
 * What a demo's own README sets up: a remote plugin catalog beside the config is TA_REMOTE_PLUGIN_PATH,
 * and the server runs from the directory its `openapi_json_path`s are relative to (upstream reads them
 * from the working directory: demo 04 from docs/, demo 05 from 05_deployment/).
 */
function demoSetup(file) {
  const catalog = join(dirname(file), 'remote-plugin-catalog.yaml');
  if (!exists(catalog)) return { env: {}, cwd: process.cwd() };
  const first = /openapi_json_path:\s*(\S+)/.exec(readFileSync(catalog, 'utf8'))?.[1];
  let cwd = dirname(file);
  while (first && !exists(join(cwd, first)) && dirname(cwd) !== cwd) cwd = dirname(cwd);
  return { env: { TA_REMOTE_PLUGIN_PATH: catalog }, cwd: first && exists(join(cwd, first)) ? cwd : process.cwd() };
}

function exists(path) {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function yamlFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === '.git' || e.name === '.github' || e.name === 'node_modules') return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(e.name) ? [path] : [];
  });
}

function boot(file) {
  const setup = demoSetup(file);
  return new Promise((done) => {
    const child = spawn(process.execPath, [cli, 'serve', file, '--port', '0'], {
      cwd: setup.cwd,
      env: {
        ...process.env,
        TA_AUTH_MODE: 'dev',
        TA_LOG_LEVEL: 'info',
        TA_BASE_URL: 'http://127.0.0.1:9/v1',
        TA_API_KEY: 'never-used',
        NODE_ENV: 'development',
        ...setup.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const finish = (outcome) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      done(outcome);
    };
    const timer = setTimeout(() => finish(`no answer within ${BOOT_TIMEOUT_MS / 1000} s`), BOOT_TIMEOUT_MS);
    const read = (chunk) => {
      out += chunk;
      if (/"msg":"[^"]*listening/i.test(out)) finish('boots');
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', () => {
      const lines = out
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      // The first problem of a ConfigError is the line after its heading.
      const problem = lines.find((l) => l.startsWith('- ')) ?? lines.find((l) => !l.startsWith('{')) ?? lines[0] ?? 'exited';
      finish(`refused: ${problem.replace(/^- /, '').replaceAll(root + '/', '')}`);
    });
  });
}

const configs = yamlFiles(root)
  .map((file) => ({ file, text: readFileSync(file, 'utf8') }))
  .filter(({ text }) => /^apiVersion:\s*(skagents|tealagents)\//m.test(text))
  .sort((a, b) => a.file.localeCompare(b.file));
const counts = { boots: 0, refused: 0, orchestrator: 0 };
for (const { file, text } of configs) {
  const kind = /^kind:\s*(\S+)/m.exec(text)?.[1] ?? '(none)';
  let outcome;
  if (/Orchestrator$/.test(kind)) {
    outcome = `not an agent config (kind ${kind}: upstream's orchestrator service)`;
    counts.orchestrator++;
  } else {
    outcome = await boot(file);
    counts[outcome === 'boots' ? 'boots' : 'refused']++;
  }
  process.stdout.write(`${relative(root, file)}\t${outcome}\n`);
}
process.stdout.write(
  `\n${configs.length} configs: ${counts.boots} boot, ${counts.refused} refused, ${counts.orchestrator} orchestrator configs (not agents)\n`,
);
