import { ConfigError } from './agents/config/config-error';
import { EnvConfigError } from './config/env.config';
import { BackendBootError } from './state/backend-boot-error';

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (choose another TA_PORT or --port)',
  EACCES: 'permission denied (ports below 1024 need privileges: choose another TA_PORT or --port)',
  EADDRNOTAVAIL: 'the address is not available on this machine (check TA_HOST)',
};

/**
 * Prints why the server cannot start and exits 1. Configuration problems are listed without a
 * stack (they are the user's to fix, all at once); a port that cannot be bound, or a state backend
 * that cannot be used (missing credentials, nothing listening), gets one plain line;
 * anything else is a bug or an environment failure, so its stack is printed.
 */
export function reportBootFailure(err: unknown): never {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (err instanceof ConfigError || err instanceof EnvConfigError) {
    process.stderr.write(`${err.message}\n`);
  } else if (err instanceof BackendBootError) {
    process.stderr.write(`teal-agent-server cannot start: ${err.message}\n`);
  } else if (e?.syscall === 'listen' && e.code && LISTEN_ERRORS[e.code]) {
    process.stderr.write(`teal-agent-server cannot listen on ${e.address ?? ''}:${e.port ?? ''}: ${LISTEN_ERRORS[e.code]}\n`);
  } else {
    process.stderr.write(`teal-agent-server failed to start: ${e?.stack ?? String(err)}\n`);
  }
  process.exit(1);
}
