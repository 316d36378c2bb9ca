import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { DestinationStream, Logger } from 'pino';
import { AgentDefinition } from './agents/config/agent-definition';
import { ConfigError } from './agents/config/config-error';
import { loadAgentConfigs } from './agents/config/load-agent-configs';
import { AppModule } from './app.module';
import { corsMiddleware } from './common/http/cors.middleware';
import { verifyJsonDepth } from './common/http/json-depth';
import { jsonOnlyMiddleware, readsAsJson } from './common/http/json-only.middleware';
import { requestIdMiddleware } from './common/http/request-id.middleware';
import { createLogger } from './common/logging/logger';
import { PinoNestLogger } from './common/logging/pino-nest.logger';
import { EnvConfig, loadEnvConfig } from './config/env.config';
import { isKnownLocalModel } from './llm/local/local-models';
import { FetchLike, LlmProvider, LlmProviderConfigError } from './llm/llm-provider';
import { httpTelemetryMiddleware } from './telemetry/http-telemetry.middleware';
import { activeTraceIds, Telemetry } from './telemetry/telemetry';
import { StateStore } from './state/state-store';
import { createStateStore } from './state/state-store.factory';

export interface CreateAppOptions {
  /** Defaults to the validated process environment. */
  env?: EnvConfig;
  /** Overrides TA_SERVICE_CONFIG. */
  configPath?: string;
  /** Where JSON log lines go (default stdout). */
  logDestination?: DestinationStream;
  /** The `fetch` the model SDK uses (default: the global one). */
  llmFetch?: FetchLike;
  /** A ready state store (default: the one TA_STATE_STORE selects). */
  store?: StateStore;
}

export interface CreatedApp {
  app: NestExpressApplication;
  env: EnvConfig;
  agents: AgentDefinition[];
  logger: Logger;
}

const PACKAGE_VERSION = '0.1.0';

/**
 * Builds the whole application: validates the environment and every agent config first (all
 * problems at once, before anything listens), then composes Nest. `main.ts`, the CLI and the e2e
 * tests all start the app through here, so tests run exactly what production runs.
 */
export async function createApp(options: CreateAppOptions = {}): Promise<CreatedApp> {
  const env = options.env ?? loadEnvConfig();
  const logger = createLogger(env.telemetry.logLevel, options.logDestination, activeTraceIds);
  const configPath = options.configPath ?? env.serviceConfigPath;
  if (!configPath) throw new ConfigError(['TA_SERVICE_CONFIG is not set: name an agent YAML file or a directory of them']);
  const agents = loadAgentConfigs(configPath, isKnownLocalModel);
  const llm = new LlmProvider(env.llm, options.llmFetch);
  const providerProblems: string[] = [];
  for (const a of agents) {
    const specs = a.sequential ? [...a.sequential.agents.values()] : [a.agent];
    for (const s of specs) {
      try {
        llm.assertServable(s.model, `${a.file}: ${a.sequential ? `spec.agents[${s.name}]` : 'spec.agent'}.model`);
      } catch (e) {
        if (!(e instanceof LlmProviderConfigError)) throw e;
        providerProblems.push(e.message);
      }
    }
  }
  if (providerProblems.length) throw new ConfigError(providerProblems);
  if (env.auth.mode === 'dev') {
    logger.warn('TA_AUTH_MODE=dev: requests are NOT authenticated; every caller is the development identity. Never use this in production.');
  }

  const telemetry = new Telemetry({
    serviceName: 'teal-agent-server',
    serviceVersion: PACKAGE_VERSION,
    otlpEndpoint: env.telemetry.otlpEndpoint,
  });
  const store = options.store ?? (await createStateStore(env.state, { production: env.production, logger }));
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot({ env, agents, logger, telemetry, llm, store }), {
    bodyParser: false,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  app.disable('x-powered-by');
  // API responses are fresh by nature: Express would hash every body for an ETag nobody sends back.
  app.set('etag', false);
  app.use(requestIdMiddleware);
  app.use(httpTelemetryMiddleware(telemetry, logger));
  // Before routing, auth and the 415 check: preflights are answered here, and every answer (errors too) carries the CORS headers.
  app.use(corsMiddleware(env.cors, { devAuth: env.auth.mode === 'dev' }));
  app.use(jsonOnlyMiddleware);
  // `verify` runs on the raw body before parsing (the nesting limit). Nest passes it through; its
  // option type leaves it out only because its own rawBody option uses it, which is off here.
  const jsonOptions = {
    limit: env.http.maxBodyBytes,
    type: (req: { headers: { 'content-type'?: string } }) => readsAsJson(req.headers['content-type']),
    verify: verifyJsonDepth,
  };
  app.useBodyParser('json', jsonOptions);
  return { app, env, agents, logger };
}
