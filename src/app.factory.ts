import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
// The adapter's own module, not the package's index: that also loads the multer integration (multer
// and busboy, ~20 modules), which nothing here uses (no file uploads).
import type { DestinationStream, Logger } from 'pino';
import { AgentDefinition } from './agents/config/agent-definition';
import { ConfigError } from './agents/config/config-error';
import { loadAgentConfigs } from './agents/config/load-agent-configs';
import { AgentReload } from './reload/agent-reload';
import type { BuiltGeneration } from './reload/config-reloader';
import { AppModule } from './app.module';
import { corsMiddleware } from './common/http/cors.middleware';
import { verifyJsonDepth } from './common/http/json-depth';
import { jsonBodyMiddleware } from './common/http/json-body.middleware';
import { usePromiseInterceptors } from './common/http/promise-interceptors';
import { jsonOnlyMiddleware, readsAsJson } from './common/http/json-only.middleware';
import { middlewareChain } from './common/http/middleware-chain';
import { requestIdMiddleware } from './common/http/request-id.middleware';
import { JsonReplyExpressAdapter } from './common/http/json-reply.express-adapter';
import { drainingMiddleware } from './common/shutdown/draining.middleware';
import { ShutdownStateService } from './common/shutdown/shutdown-state.service';
import { AuditLog } from './common/logging/audit-log';
import { createLogger } from './common/logging/logger';
import { PinoNestLogger } from './common/logging/pino-nest.logger';
import { EnvConfig, loadEnvConfig } from './config/env.config';
import { isKnownLocalModel } from './llm/local/local-models';
import { LlmProvider, LlmProviderConfigError } from './llm/llm-provider';
import { httpTelemetryMiddleware } from './telemetry/http-telemetry.middleware';
import { activeTraceIds, Telemetry } from './telemetry/telemetry';
import { isPooledStore } from './state/connection-pool';
import { StateStore } from './state/state-store';
import { createStateStore } from './state/state-store.factory';
import type { ArchivePort } from './archive/archive.port';
import { createArchive } from './archive/archive.factory';

export interface CreateAppOptions {
  /** Defaults to the validated process environment. */
  env?: EnvConfig;
  /** Overrides TA_SERVICE_CONFIG. */
  configPath?: string;
  /** Where JSON log lines go (default stdout). */
  logDestination?: DestinationStream;
  /** A ready state store (default: the one TA_STATE_STORE selects). */
  store?: StateStore;
  /** A ready audit archive (default: the one TA_ARCHIVE_URL names, if any). */
  archive?: ArchivePort;
  /** Set by a config reload (src/reload): the parts of the first app the new one shares. */
  shared?: SharedParts;
}

interface SharedParts {
  logger: Logger;
  telemetry: Telemetry;
  store: StateStore;
  archive?: ArchivePort;
  audit: AuditLog;
  shutdown: ShutdownStateService;
}

export interface CreatedApp {
  app: NestExpressApplication;
  env: EnvConfig;
  agents: AgentDefinition[];
  logger: Logger;
  /** SIGHUP and TA_CONFIG_WATCH; `start` it once the server listens (absent in an app a reload built). */
  reload?: AgentReload;
}

const PACKAGE_VERSION = '0.1.0';

/**
 * Builds the whole application: validates the environment and every agent config first (all
 * problems at once, before anything listens), then composes Nest. `main.ts`, the CLI and the e2e
 * tests all start the app through here, so tests run exactly what production runs.
 */
export async function createApp(options: CreateAppOptions = {}): Promise<CreatedApp> {
  const env = options.env ?? loadEnvConfig();
  const logger = options.shared?.logger ?? createLogger(env.telemetry.logLevel, options.logDestination, activeTraceIds);
  const configPath = options.configPath ?? env.serviceConfigPath;
  if (!configPath) throw new ConfigError(['TA_SERVICE_CONFIG is not set: name an agent YAML file or a directory of them']);
  // With an archive, the store keeps the archive index its catch-up reads (StateStore.listUnarchived).
  const archiveIndex = !!env.archive;
  // The store's connection is begun before the agents are read, so the database's side of it (a
  // PostgreSQL backend's fork, a TLS handshake) overlaps that work; it is awaited after them, so a
  // config error is still reported first (and the store it began is closed).
  const givenStore = options.shared?.store ?? options.store;
  const creating = givenStore ? undefined : createStateStore(env.state, { production: env.production, logger, archiveIndex });
  creating?.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
  const llm = new LlmProvider(env.llm);
  let agents: AgentDefinition[];
  try {
    agents = loadAgentConfigs(configPath, isKnownLocalModel, (warning) => logger.warn(warning));
    assertProvidersServe(agents, llm);
  } catch (err) {
    void creating?.then(
      (s) => s.close(),
      () => undefined,
    );
    throw err;
  }
  if (env.auth.mode === 'dev' && !options.shared) {
    logger.warn('TA_AUTH_MODE=dev: requests are NOT authenticated; every caller is the development identity. Never use this in production.');
  }

  const telemetry =
    options.shared?.telemetry ??
    new Telemetry({
      serviceName: 'teal-agent-server',
      serviceVersion: PACKAGE_VERSION,
      otlpEndpoint: env.telemetry.otlpEndpoint,
      prometheus: env.telemetry.prometheus,
    });
  const store = givenStore ?? (await creating!);
  const archive = options.shared ? options.shared.archive : (options.archive ?? (await createArchiveOrClose(env, store)));
  // The pool's waits and connections (PostgreSQL), only for a store that keeps a pool; a reload shares both, already observed.
  if (!options.shared && isPooledStore(store)) telemetry.observeStorePool(store);
  let reload: AgentReload | undefined;
  const reloaded = options.shared && { audit: options.shared.audit, shutdown: options.shared.shutdown };
  const beforeClose = options.shared ? undefined : async () => reload?.close();
  // Our one interceptor wraps handlers with promises, not an rxjs chain per request.
  usePromiseInterceptors();
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot({ env, agents, logger, telemetry, llm, store, archive, reloaded, beforeClose }),
    // JSON answers written at once, not through res.json's type lookups (json-reply.express-adapter.ts).
    new JsonReplyExpressAdapter(),
    {
      bodyParser: false,
      logger: new PinoNestLogger(logger),
      abortOnError: false,
    },
  );
  if (!options.shared) {
    const shared = { logger, telemetry, store, archive, audit: app.get(AuditLog), shutdown: app.get(ShutdownStateService) };
    const build = () => buildReloadedApp({ ...options, env, configPath, shared });
    reload = new AgentReload(app, { configPath, agents, watch: env.configWatch, logger, build });
    // First: a request goes whole to the app of the config that is current when it arrives.
    app.use(reload.dispatch);
  }
  app.disable('x-powered-by');
  // API responses are fresh by nature: Express would hash every body for an ETag nobody sends back.
  app.set('etag', false);
  // In this order, as one Express layer (middleware-chain.ts says why).
  app.use(
    middlewareChain([
      requestIdMiddleware,
      httpTelemetryMiddleware(telemetry, logger),
      // Before routing, auth and the 415 check: preflights are answered here, and every answer (errors too) carries the CORS headers.
      corsMiddleware(env.cors, { devAuth: env.auth.mode === 'dev' }),
      // After CORS, so a 503 while draining carries the CORS headers a browser needs to read it.
      drainingMiddleware(app.get(ShutdownStateService)),
      jsonOnlyMiddleware,
      // The plain JSON bodies (nearly all) are read by our own reader; body-parser (below) reads the rest.
      jsonBodyMiddleware(env.http.maxBodyBytes),
    ]),
  );
  // `verify` runs on the raw body before parsing (the nesting limit). Nest passes it through; its
  // option type leaves it out only because its own rawBody option uses it, which is off here.
  const jsonOptions = {
    limit: env.http.maxBodyBytes,
    type: (req: { headers: { 'content-type'?: string } }) => readsAsJson(req.headers['content-type']),
    verify: verifyJsonDepth,
  };
  app.useBodyParser('json', jsonOptions);
  return { app, env, agents, logger, reload };
}

/** The app of the config as it is now on disk, built exactly as at boot, ready to take requests. */
async function buildReloadedApp(options: CreateAppOptions): Promise<BuiltGeneration> {
  const { app, agents } = await createApp(options);
  try {
    await app.init();
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  return { app, agents };
}

/** The archive TA_ARCHIVE_URL names; a boot it stops closes the store it opened first. */
async function createArchiveOrClose(env: EnvConfig, store: StateStore): Promise<ArchivePort | undefined> {
  try {
    return await createArchive(env.archive);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
}

/** Every agent's model can be served by the configured provider: all problems at once, as a ConfigError. */
function assertProvidersServe(agents: AgentDefinition[], llm: LlmProvider): void {
  const problems: string[] = [];
  for (const a of agents) {
    const specs = a.sequential ? [...a.sequential.agents.values()] : [a.agent];
    for (const s of specs) {
      try {
        llm.assertServable(s.model, `${a.file}: ${a.sequential ? `spec.agents[${s.name}]` : 'spec.agent'}.model`);
      } catch (e) {
        if (!(e instanceof LlmProviderConfigError)) throw e;
        problems.push(e.message);
      }
    }
  }
  if (problems.length) throw new ConfigError(problems);
}
