import 'reflect-metadata';
import { createApp } from './app.factory';
import { flushBootCompileCacheSoon } from './boot-compile-cache';
import { reportBootFailure } from './boot-failure';
import { releaseBootHeap } from './boot-heap';
import { tierUpSooner } from './boot-tiering';
import { drainAndClose } from './common/shutdown/graceful-shutdown';

/** Serves the agents named by TA_SERVICE_CONFIG on TA_HOST:TA_PORT. Composition only. */
export async function serve(options: { configPath?: string; port?: number } = {}): Promise<void> {
  const started = performance.now();
  const { app, env, agents, logger, reload } = await createApp({ configPath: options.configPath });
  await app.listen(options.port ?? env.http.port, env.http.host);
  // The bound port, not the requested one: `--port 0` picks a free port.
  const { port } = app.getHttpServer().address() as { port: number };
  releaseBootHeap();
  tierUpSooner();
  // Before the "listening" line: whatever waits for that line may signal at once (a supervisor, a
  // test), and a signal before the handlers would kill the process undrained. Not Nest's shutdown
  // hooks: they close at once and re-raise the signal (exit 143). A drained shutdown exits 0, one
  // that had to cut work off (its outcome maybe not stored) 1; a second signal stops the process at
  // once (the default action).
  const stop = (signal: NodeJS.Signals) => {
    process.off('SIGTERM', stop).off('SIGINT', stop);
    logger.info({ signal }, 'shutdown requested');
    drainAndClose(app, env.http.shutdownGraceMs, logger).then(
      (clean) => process.exit(clean ? 0 : 1),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop).once('SIGINT', stop);
  reload?.start(app.getHttpServer());
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
  // Out at once, not with the next batch of lines: what waits for a replica to be up reads this one.
  logger.flush();
  flushBootCompileCacheSoon();
}

if (require.main === module) {
  serve().catch(reportBootFailure);
}
