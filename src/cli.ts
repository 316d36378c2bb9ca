import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from './package-root';
import { holdBootHeap } from './boot-heap';
import { withoutHttpUndiciExports } from './boot-http-facade';
import { withLazyDateTimeFormats } from './boot-intl';
import { useVendorBundle } from './boot-vendor-bundle';
// Only what every command needs is imported here: `serve` loads the rest (validation, Nest)
// after holdBootHeap, and `--help` or a usage error loads none of it.

export const USAGE = `Usage:
  teal-agent-server serve [<config path>] [--port <n>]
      Serve the agents of one YAML file, or of every *.yaml/*.yml file of a directory (not its
      subdirectories). The path defaults to TA_SERVICE_CONFIG; --port overrides TA_PORT (default
      8000; 0 picks a free port).
  teal-agent-server create-dynamodb-table
      Create the DynamoDB state table (and its TTL attribute) once, from TA_DYNAMODB_TABLE,
      TA_DYNAMODB_ENDPOINT and AWS_REGION; does nothing when it exists.
  teal-agent-server migrate
      Bring the PostgreSQL state schema (TA_POSTGRES_SCHEMA at TA_POSTGRES_URL) to this release's
      version, for servers run with TA_POSTGRES_MIGRATE=off; does nothing when it is there.
  teal-agent-server --help | -h       Show this help.
  teal-agent-server --version | -v    Show the version.

Every agent field and environment variable is described in docs/configuration.md. The
configuration is validated before anything listens: an invalid one exits with status 1 and lists
every problem; a wrong command line exits with status 2.

Examples:
  TA_AUTH_MODE=dev teal-agent-server serve config/agents.example.yaml --port 9000
  TA_SERVICE_CONFIG=./agents TA_API_KEY=sk-... teal-agent-server serve`;

/** A wrong command line: exit status 2, as getopt-style tools do. */
function usageError(message: string): never {
  process.stderr.write(`teal-agent-server: ${message}\nRun "teal-agent-server --help" for usage.\n`);
  process.exit(2);
}

/**
 * The app validates the environment, then the agents, and stops at the first that fails. Checking
 * both here first lets one run report every problem of both; the app's own checks then pass.
 */
function preflight(configPath: string): void {
  const { ConfigError } = require('./agents/config/config-error') as typeof import('./agents/config/config-error');
  const { loadAgentConfigs } = require('./agents/config/load-agent-configs') as typeof import('./agents/config/load-agent-configs');
  const { EnvConfigError, loadEnvConfig } = require('./config/env.config') as typeof import('./config/env.config');
  const messages: string[] = [];
  for (const check of [() => loadEnvConfig(), () => loadAgentConfigs(configPath)]) {
    try {
      check();
    } catch (e) {
      if (!(e instanceof EnvConfigError || e instanceof ConfigError)) throw e;
      messages.push(e.message);
    }
  }
  if (messages.length) {
    process.stderr.write(`${messages.join('\n')}\n`);
    process.exit(1);
  }
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The `teal-agent-server` command (package.json `bin`). */
export async function runCli(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command === '--version' || command === '-v') {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  if (command === 'create-dynamodb-table') {
    const cmd = require('./state/backends/dynamodb/create-table.cli') as typeof import('./state/backends/dynamodb/create-table.cli');
    await cmd.createTableFromEnv().catch(cmd.reportCreateTableFailure);
    return;
  }
  if (command === 'migrate') {
    const cmd = require('./state/backends/postgres/migrate.cli') as typeof import('./state/backends/postgres/migrate.cli');
    await cmd.migrateFromEnv().catch(cmd.reportMigrateFailure);
    return;
  }
  if (command !== 'serve') usageError(`unknown command "${command}"`);

  let configPath: string | undefined;
  let port: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--help' || arg === '-h') {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    if (arg === '--port' || arg.startsWith('--port=')) {
      const value = arg.includes('=') ? arg.slice('--port='.length) : rest[++i];
      port = value !== undefined && /^\d+$/.test(value) ? Number(value) : NaN;
      if (!(port >= 0 && port <= 65535)) usageError(`--port must be an integer from 0 to 65535 (got ${value ?? 'nothing'})`);
    } else if (arg.startsWith('-')) usageError(`unknown option "${arg}"`);
    else if (configPath === undefined) configPath = arg;
    else usageError(`unexpected argument "${arg}" (serve takes one config path)`);
  }
  configPath ??= process.env.TA_SERVICE_CONFIG || undefined;
  if (!configPath) usageError('serve needs a config path: give one, or set TA_SERVICE_CONFIG');
  holdBootHeap(); // released once the server listens (main.ts)
  useVendorBundle(); // before Nest and the other bundled packages first load
  require('reflect-metadata');
  preflight(configPath);
  const { serve } = withoutHttpUndiciExports(() => withLazyDateTimeFormats(() => require('./main') as typeof import('./main')));
  await serve({ configPath, port });
}

/**
 * Reports what stopped the CLI and exits 1. The installed command (bin/) calls it through this
 * module, not boot-failure's own file: in the one-file build (scripts/bundle-vendor.mjs) the errors
 * it tells apart by class are this file's copies.
 */
export function reportBootFailure(err: unknown): never {
  return (require('./boot-failure') as typeof import('./boot-failure')).reportBootFailure(err);
}

if (require.main === module) {
  runCli(process.argv.slice(2)).catch(reportBootFailure);
}
