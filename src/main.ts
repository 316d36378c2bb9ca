import 'reflect-metadata';
import { createApp } from './app.factory';
import { reportBootFailure } from './boot-failure';

/** Serves the agents named by TA_SERVICE_CONFIG on TA_HOST:TA_PORT. Composition only. */
export async function serve(options: { configPath?: string; port?: number } = {}): Promise<void> {
  const started = performance.now();
  const { app, env, agents, logger } = await createApp({ configPath: options.configPath });
  app.enableShutdownHooks();
  await app.listen(options.port ?? env.http.port, env.http.host);
  // The bound port, not the requested one: `--port 0` picks a free port.
  const { port } = app.getHttpServer().address() as { port: number };
  logger.info(
    {
      port,
      host: env.http.host,
      agents: agents.map((a) => a.prefix),
      state_store: env.state.store,
      auth_mode: env.auth.mode,
      startup_ms: Math.round(performance.now() - started),
    },
    'teal-agent-server listening',
  );
}

if (require.main === module) {
  serve().catch(reportBootFailure);
}
