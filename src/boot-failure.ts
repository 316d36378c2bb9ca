import { ConfigError } from './agents/config/config-error';
import { EnvConfigError } from './config/env.config';

/** Prints why the server cannot start (every problem, no stack for config errors) and exits 1. */
export function reportBootFailure(err: unknown): never {
  if (err instanceof ConfigError || err instanceof EnvConfigError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`teal-agent-server failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  }
  process.exit(1);
}
