import { plainToInstance } from 'class-transformer';
import { validateSync } from '../common/validation/class-validator-parts';
import { flattenValidationErrors } from '../common/validation/flatten-validation-errors';
import { CorsConfig, corsConfigOf } from '../common/http/cors-policy';
import type { LogLevel } from '../common/logging/logger';
import { checkEnvCombinations } from './env-combinations';
import { EnvVars, FrontDoor } from './env.schema';

export class EnvConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid environment (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`);
    this.name = 'EnvConfigError';
  }
}

/** Bounds of the v3 streams' replay (src/tasks/events/task-event-log.service.ts, src/tasks/reattach/replay-admission.service.ts). */
export interface StreamReplayLimits {
  maxBytes: number;
  streamMaxBytes: number;
  ttlSeconds: number;
  maxPerCaller: number;
  maxPerReplica: number;
}

/** Bounds of the `/stream` WebSockets (src/api/stateless/stream-socket.gateway.ts). */
export interface StreamSocketLimits {
  firstMessageTimeoutMs: number;
  maxPerCaller: number;
}

export interface RateLimitDefaults {
  callerRpm?: number;
  agentRpm?: number;
  callerConcurrency?: number;
  callerTpm?: number;
}

/** Tool settings (docs/tools.md lists the variables); src/tools/tools.config.ts has the defaults. */
export interface ToolsConfig {
  /** TA_TOOL_TIMEOUT_MS: per call attempt, unless the tool's source sets its own. */
  timeoutMs: number;
  /** TA_TOOL_MAX_RETRIES: extra attempts after a transient failure. */
  maxRetries: number;
  /** TA_TOOL_RETRY_BASE_MS: first backoff delay; doubled on each further attempt. */
  retryBaseMs: number;
  /** TA_PLUGIN_MODULE: a plugin module file, or a directory of them. */
  pluginModule?: string;
  /** TA_REMOTE_PLUGIN_PATH: the remote (OpenAPI) plugin catalog YAML. */
  remotePluginPath?: string;
  /** TA_PLUGIN_CATALOG_FILE: upstream's plugin catalog JSON (governance per tool). */
  pluginCatalogFile?: string;
  /** TA_PYTHON, TA_PYTHON_PLUGINS, TA_PYTHON_PLUGIN_CONCURRENCY (docs/python-plugins.md); absent: python3, on, 8. */
  python?: PythonPluginsConfig;
}

export interface PythonPluginsConfig {
  interpreter: string;
  enabled: boolean;
  concurrency: number;
}

/** The validated environment, grouped for the modules that read it. */
export interface EnvConfig {
  serviceConfigPath?: string;
  /** TA_CONFIG_WATCH: reload the agents when their files change. */
  configWatch: boolean;
  http: {
    port: number;
    host: string;
    maxBodyBytes: number;
    sseKeepaliveMs: number;
    shutdownGraceMs: number;
    streamLogMaxBytes: number;
    streamReplay: StreamReplayLimits;
    streamSocket: StreamSocketLimits;
  };
  llm: {
    apiKey?: string;
    baseUrl?: string;
    azure?: { endpoint: string; apiVersion: string };
    timeoutMs: number;
    maxRetries: number;
  };
  telemetry: { otlpEndpoint?: string; prometheus: boolean; logLevel: LogLevel; auditLogPath?: string };
  state: {
    store: 'memory' | 'redis' | 'dynamodb' | 'postgres';
    leaseMs: number;
    /** TA_LEASE_SWEEP_MS (0: no sweep). */
    leaseSweepMs: number;
    taskTtlSeconds?: number;
    /** TA_IDEMPOTENCY_TTL_SECONDS. */
    idempotencyTtlSeconds: number;
    /** src/tasks/writer/task-cache.ts (0: no cache). */
    taskCacheMaxBytes?: number;
    redisUrl?: string;
    dynamodb?: { table: string; endpoint?: string; region: string; createTable: boolean };
    /** TA_POSTGRES_* (docs/configuration.md, PostgreSQL); set when TA_STATE_STORE=postgres or TA_POSTGRES_URL is. */
    postgres?: {
      url: string;
      schema: string;
      poolMax: number;
      acquireTimeoutMs: number;
      statementTimeoutMs: number;
      migrate: 'auto' | 'off';
      preparedStatements: boolean;
      pipeline: boolean;
    };
  };
  /** TA_ARCHIVE_* (docs/archive.md); set when TA_ARCHIVE_URL is. */
  archive?: {
    url: string;
    schema: string;
    maxPayloadBytes: number;
    retentionDays: number;
    /** TA_ARCHIVE_RETENTION_SWEEP_MS: the retention's pass interval (0: never). */
    retentionSweepMs: number;
    queueMax: number;
    catchupMs: number;
    graceMs: number;
    poolMax: number;
    statementTimeoutMs: number;
  };
  /** The app roles of the archive's readers and of erasure (TA_AUDIT_ROLE, TA_ADMIN_ROLE). */
  roles: { audit: string; admin: string };
  auth: {
    mode: 'entra' | 'dev';
    tenantId?: string;
    audiences: string[];
    allowedTenants: string[];
    requiredScopes: string[];
    requiredRoles: string[];
    authority: string;
    clockSkewSeconds: number;
    jwksCooldownMs: number;
    idpTimeoutMs: number;
  };
  tools: ToolsConfig;
  /** TA_WEBHOOK_* (docs/webhooks.md). */
  webhooks: { allowPrivate: boolean; retryHours: number; timeoutMs: number };
  /** TA_FRONT_DOORS: the protocols served (docs/api.md, "Front doors"). */
  frontDoors: ReadonlySet<FrontDoor>;
  /** TA_A2A_DEFAULT_AGENT: `name:version` of the agent whose A2A card the root serves (docs/a2a.md). */
  a2aDefaultAgent?: string;
  /** TA_CORS_ORIGINS (docs/api.md, CORS). */
  cors: CorsConfig;
  /** TA_RATE_LIMIT_* (src/rate-limit): the defaults of every agent's `spec.limits`; unset: no limit. */
  rateLimits: RateLimitDefaults;
  /** The web console (src/api/console, docs/console.md). */
  console: { enabled: boolean; clientId?: string; scopes: string[] };
  production: boolean;
}

export function loadEnvConfig(env: NodeJS.ProcessEnv = process.env): EnvConfig {
  // Empty strings mean "unset": shells and compose files often export VAR= .
  const plain = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const vars = plainToInstance(EnvVars, plain, { excludeExtraneousValues: false });
  // One message per variable (the first failing rule), then the rules between variables.
  const errors = validateSync(vars, { forbidUnknownValues: false, stopAtFirstError: true });
  const problems = flattenValidationErrors(errors).map((e) => (e.message.includes(e.field) ? e.message : `${e.field}: ${e.message}`));
  problems.push(...checkEnvCombinations(vars));
  if (problems.length) throw new EnvConfigError(problems);

  return {
    serviceConfigPath: vars.TA_SERVICE_CONFIG,
    configWatch: vars.TA_CONFIG_WATCH,
    http: {
      port: vars.TA_PORT,
      // Dev mode authenticates no one, so by default only this machine can reach it.
      host: vars.TA_HOST ?? (vars.TA_AUTH_MODE === 'dev' ? '127.0.0.1' : '0.0.0.0'),
      maxBodyBytes: vars.TA_MAX_BODY_BYTES,
      sseKeepaliveMs: vars.TA_SSE_KEEPALIVE_MS,
      shutdownGraceMs: vars.TA_SHUTDOWN_GRACE_MS,
      streamLogMaxBytes: vars.TA_STREAM_LOG_MAX_BYTES,
      streamReplay: {
        maxBytes: vars.TA_STREAM_REPLAY_MAX_BYTES,
        streamMaxBytes: vars.TA_STREAM_REPLAY_STREAM_MAX_BYTES,
        ttlSeconds: vars.TA_STREAM_REPLAY_TTL_SECONDS,
        maxPerCaller: vars.TA_STREAM_REPLAY_MAX_PER_CALLER,
        maxPerReplica: vars.TA_STREAM_REPLAY_MAX_PER_REPLICA,
      },
      streamSocket: { firstMessageTimeoutMs: vars.TA_WS_FIRST_MESSAGE_MS, maxPerCaller: vars.TA_WS_MAX_SOCKETS_PER_CALLER },
    },
    llm: {
      apiKey: vars.TA_API_KEY,
      baseUrl: vars.TA_BASE_URL,
      azure: vars.TA_AZURE_OPENAI_ENDPOINT
        ? {
            endpoint: vars.TA_AZURE_OPENAI_ENDPOINT,
            apiVersion: vars.TA_AZURE_OPENAI_API_VERSION ?? vars.TA_API_VERSION ?? '2024-10-21',
          }
        : undefined,
      timeoutMs: vars.TA_LLM_TIMEOUT_MS,
      maxRetries: vars.TA_LLM_MAX_RETRIES,
    },
    telemetry: {
      otlpEndpoint: vars.TA_OTEL_ENDPOINT,
      prometheus: vars.TA_METRICS_PROMETHEUS,
      logLevel: vars.TA_LOG_LEVEL as LogLevel,
      auditLogPath: vars.TA_AUDIT_LOG || undefined,
    },
    state: {
      store: vars.TA_STATE_STORE,
      leaseMs: vars.TA_TASK_LEASE_MS,
      leaseSweepMs: vars.TA_LEASE_SWEEP_MS,
      taskTtlSeconds: vars.TA_TASK_TTL_SECONDS,
      idempotencyTtlSeconds: vars.TA_IDEMPOTENCY_TTL_SECONDS,
      taskCacheMaxBytes: vars.TA_TASK_CACHE_MAX_BYTES,
      redisUrl: vars.TA_REDIS_URL,
      dynamodb:
        vars.TA_STATE_STORE === 'dynamodb' || vars.TA_DYNAMODB_TABLE
          ? {
              table: vars.TA_DYNAMODB_TABLE ?? 'teal-agent-state',
              endpoint: vars.TA_DYNAMODB_ENDPOINT,
              region: vars.AWS_REGION ?? 'us-east-1',
              createTable: vars.TA_DYNAMODB_CREATE_TABLE,
            }
          : undefined,
      postgres: vars.TA_POSTGRES_URL
        ? {
            url: vars.TA_POSTGRES_URL,
            schema: vars.TA_POSTGRES_SCHEMA,
            poolMax: vars.TA_POSTGRES_POOL_MAX,
            acquireTimeoutMs: vars.TA_POSTGRES_ACQUIRE_TIMEOUT_MS,
            statementTimeoutMs: vars.TA_POSTGRES_STATEMENT_TIMEOUT_MS,
            migrate: vars.TA_POSTGRES_MIGRATE,
            preparedStatements: vars.TA_POSTGRES_PREPARED_STATEMENTS,
            pipeline: vars.TA_POSTGRES_PIPELINE,
          }
        : undefined,
    },
    archive: vars.TA_ARCHIVE_URL
      ? {
          url: vars.TA_ARCHIVE_URL,
          schema: vars.TA_ARCHIVE_SCHEMA,
          maxPayloadBytes: vars.TA_ARCHIVE_MAX_PAYLOAD_BYTES,
          retentionDays: vars.TA_ARCHIVE_RETENTION_DAYS,
          retentionSweepMs: vars.TA_ARCHIVE_RETENTION_SWEEP_MS,
          queueMax: vars.TA_ARCHIVE_QUEUE_MAX,
          catchupMs: vars.TA_ARCHIVE_CATCHUP_MS,
          graceMs: vars.TA_ARCHIVE_GRACE_MS,
          poolMax: vars.TA_ARCHIVE_POOL_MAX,
          statementTimeoutMs: vars.TA_ARCHIVE_STATEMENT_TIMEOUT_MS,
        }
      : undefined,
    roles: { audit: vars.TA_AUDIT_ROLE, admin: vars.TA_ADMIN_ROLE },
    auth: {
      mode: vars.TA_AUTH_MODE,
      tenantId: vars.TA_ENTRA_TENANT_ID,
      audiences: vars.TA_ENTRA_AUDIENCE ?? [],
      allowedTenants: vars.TA_ENTRA_ALLOWED_TENANTS ?? [],
      requiredScopes: vars.TA_ENTRA_REQUIRED_SCOPES ?? [],
      requiredRoles: vars.TA_ENTRA_REQUIRED_ROLES ?? [],
      authority: vars.TA_ENTRA_AUTHORITY.replace(/\/+$/, ''),
      clockSkewSeconds: vars.TA_ENTRA_CLOCK_SKEW_SECONDS,
      jwksCooldownMs: vars.TA_ENTRA_JWKS_COOLDOWN_MS,
      idpTimeoutMs: vars.TA_ENTRA_IDP_TIMEOUT_MS,
    },
    frontDoors: new Set(vars.TA_FRONT_DOORS),
    a2aDefaultAgent: vars.TA_A2A_DEFAULT_AGENT?.replace('/', ':'),
    cors: corsConfigOf(vars.TA_CORS_ORIGINS),
    rateLimits: {
      callerRpm: vars.TA_RATE_LIMIT_CALLER_RPM,
      agentRpm: vars.TA_RATE_LIMIT_AGENT_RPM,
      callerConcurrency: vars.TA_RATE_LIMIT_CALLER_CONCURRENCY,
      callerTpm: vars.TA_RATE_LIMIT_CALLER_TPM,
    },
    tools: {
      timeoutMs: vars.TA_TOOL_TIMEOUT_MS,
      maxRetries: vars.TA_TOOL_MAX_RETRIES,
      retryBaseMs: vars.TA_TOOL_RETRY_BASE_MS,
      pluginModule: vars.TA_PLUGIN_MODULE,
      remotePluginPath: vars.TA_REMOTE_PLUGIN_PATH,
      pluginCatalogFile: vars.TA_PLUGIN_CATALOG_FILE,
      python: { interpreter: vars.TA_PYTHON, enabled: vars.TA_PYTHON_PLUGINS === 'on', concurrency: vars.TA_PYTHON_PLUGIN_CONCURRENCY },
    },
    webhooks: { allowPrivate: vars.TA_WEBHOOK_ALLOW_PRIVATE, retryHours: vars.TA_WEBHOOK_RETRY_HOURS, timeoutMs: vars.TA_WEBHOOK_TIMEOUT_MS },
    console: { enabled: vars.TA_CONSOLE, clientId: vars.TA_CONSOLE_CLIENT_ID, scopes: vars.TA_CONSOLE_SCOPES ?? [] },
    production: vars.NODE_ENV === 'production',
  };
}
