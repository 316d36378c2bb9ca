import 'reflect-metadata';
import { reportBootFailure } from './boot-failure';
import { serve } from './main';

const USAGE = `Usage:
  teal-agent-server serve <config path> [--port N]   serve the agent YAML file or directory
  teal-agent-server --help

Environment variables are described in the README (TA_PORT, TA_STATE_STORE, TA_AUTH_MODE, ...).`;

/** The `teal-agent-server` command (package.json `bin`). */
export async function runCli(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command !== 'serve') {
    process.stderr.write(`unknown command "${command}"\n${USAGE}\n`);
    process.exit(2);
  }
  let configPath: string | undefined;
  let port: number | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--port' || arg.startsWith('--port=')) {
      const value = arg.includes('=') ? arg.split('=')[1] : rest[++i];
      port = Number(value);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        process.stderr.write(`--port must be an integer from 0 to 65535 (got ${value})\n`);
        process.exit(2);
      }
    } else if (!arg.startsWith('-') && configPath === undefined) configPath = arg;
    else {
      process.stderr.write(`unexpected argument "${arg}"\n${USAGE}\n`);
      process.exit(2);
    }
  }
  await serve({ configPath: configPath ?? process.env.TA_SERVICE_CONFIG, port });
}

if (require.main === module) {
  runCli(process.argv.slice(2)).catch(reportBootFailure);
}
