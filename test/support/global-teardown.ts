import type { ServerHandle } from './services';

/** Stops the servers the global setup started (globals set there are visible here, and only here). */
export default async function globalTeardown(): Promise<void> {
  const servers = (globalThis as { __testServers?: ServerHandle[] }).__testServers ?? [];
  await Promise.all(servers.map((s) => s.stop()));
}
