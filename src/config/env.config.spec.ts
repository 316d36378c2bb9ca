import { EnvConfigError, loadEnvConfig } from './env.config';

/** The problems loadEnvConfig reports for an environment, or [] when it loads. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadEnvConfig(env);
    return [];
  } catch (e) {
    if (!(e instanceof EnvConfigError)) throw e;
    return e.problems;
  }
}

const DEV = { TA_AUTH_MODE: 'dev' };
const TENANT = '11111111-2222-3333-4444-555555555555';
const ENTRA = { TA_ENTRA_AUDIENCE: 'api://teal', TA_ENTRA_TENANT_ID: TENANT, TA_ENTRA_REQUIRED_SCOPES: 'Agents.Invoke' };

describe('loadEnvConfig', () => {
  it('applies the documented defaults', () => {
    const env = loadEnvConfig({ ...ENTRA });
    expect(env.http).toEqual({
      port: 8000,
      host: '0.0.0.0',
      maxBodyBytes: 10 * 1024 * 1024,
      sseKeepaliveMs: 15_000,
      shutdownGraceMs: 25_000,
      streamLogMaxBytes: 1024 * 1024,
      streamReplay: { maxBytes: 64 * 1024 * 1024, streamMaxBytes: 1024 * 1024, ttlSeconds: 300, maxPerCaller: 8, maxPerReplica: 256 },
      streamSocket: { firstMessageTimeoutMs: 10_000, maxPerCaller: 20 },
    });
    expect(env.llm).toEqual({ apiKey: undefined, baseUrl: undefined, azure: undefined, timeoutMs: 120_000, maxRetries: 2 });
    expect(env.state).toMatchObject({
      store: 'memory',
      leaseMs: 30_000,
      leaseSweepMs: 5_000,
      taskTtlSeconds: undefined,
      idempotencyTtlSeconds: 86_400,
      redisUrl: undefined,
      dynamodb: undefined,
    });
    expect(env.telemetry).toEqual({ otlpEndpoint: undefined, prometheus: false, logLevel: 'info' });
    expect(env.auth).toMatchObject({
      mode: 'entra',
      audiences: ['api://teal'],
      allowedTenants: [],
      requiredScopes: ['Agents.Invoke'],
      requiredRoles: [],
      authority: 'https://login.microsoftonline.com',
    });
    expect(env.production).toBe(false);
    expect(env.serviceConfigPath).toBeUndefined();
  });

  it('converts numbers, booleans and lists, and treats an empty variable as unset', () => {
    const env = loadEnvConfig({
      ...DEV,
      TA_PORT: '9001',
      TA_HOST: '',
      TA_STATE_STORE: 'dynamodb',
      TA_DYNAMODB_TABLE: 'teal-state',
      AWS_REGION: 'eu-west-1',
      TA_DYNAMODB_CREATE_TABLE: 'yes',
      TA_ENTRA_REQUIRED_SCOPES: 'Agents.Invoke, Agents.Read  Other',
      TA_ENTRA_AUTHORITY: 'http://127.0.0.1:4000///',
      TA_LOG_LEVEL: 'WARNING',
    });
    expect(env.http.port).toBe(9001);
    expect(env.http.host).toBe('127.0.0.1');
    expect(env.state.dynamodb).toEqual({ table: 'teal-state', endpoint: undefined, region: 'eu-west-1', createTable: true });
    expect(env.auth.requiredScopes).toEqual(['Agents.Invoke', 'Agents.Read', 'Other']);
    expect(env.auth.authority).toBe('http://127.0.0.1:4000');
    expect(env.telemetry.logLevel).toBe('warn');
  });

  it('reads the webhook settings: private addresses refused and 24 hours of retries by default', () => {
    expect(loadEnvConfig({ ...DEV }).webhooks).toEqual({ allowPrivate: false, retryHours: 24, timeoutMs: 10_000 });
    expect(loadEnvConfig({ ...DEV, TA_WEBHOOK_ALLOW_PRIVATE: 'true', TA_WEBHOOK_RETRY_HOURS: '72', TA_WEBHOOK_TIMEOUT_MS: '500' }).webhooks).toEqual({
      allowPrivate: true,
      retryHours: 72,
      timeoutMs: 500,
    });
    expect(problemsOf({ ...DEV, TA_WEBHOOK_RETRY_HOURS: '0', TA_WEBHOOK_ALLOW_PRIVATE: 'maybe' })).toEqual([
      expect.stringMatching(/^TA_WEBHOOK_ALLOW_PRIVATE /),
      expect.stringMatching(/^TA_WEBHOOK_RETRY_HOURS /),
    ]);
  });

  it('reads the PostgreSQL settings, with their defaults', () => {
    const url = 'postgres://teal:secret@db.example.com:5432/agents?sslmode=require';
    expect(loadEnvConfig({ ...DEV, TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: url }).state.postgres).toEqual({
      url,
      schema: 'teal_agent',
      poolMax: 10,
      acquireTimeoutMs: 2000,
      statementTimeoutMs: 5000,
      migrate: 'auto',
      preparedStatements: true,
      pipeline: true,
    });
    const env = {
      ...DEV,
      TA_STATE_STORE: 'postgres',
      TA_POSTGRES_URL: 'postgresql:///agents',
      TA_POSTGRES_SCHEMA: 'agents_v2',
      TA_POSTGRES_POOL_MAX: '5',
      TA_POSTGRES_ACQUIRE_TIMEOUT_MS: '250',
      TA_POSTGRES_STATEMENT_TIMEOUT_MS: '800',
      TA_POSTGRES_MIGRATE: 'off',
      TA_POSTGRES_PREPARED_STATEMENTS: 'false',
      TA_POSTGRES_PIPELINE: 'false',
    };
    expect(loadEnvConfig(env).state.postgres).toEqual({
      url: 'postgresql:///agents',
      schema: 'agents_v2',
      poolMax: 5,
      acquireTimeoutMs: 250,
      statementTimeoutMs: 800,
      migrate: 'off',
      preparedStatements: false,
      pipeline: false,
    });
    expect(loadEnvConfig(DEV).state.postgres).toBeUndefined();
  });

  it('keeps the Azure API version, preferring TA_AZURE_OPENAI_API_VERSION over upstream TA_API_VERSION', () => {
    const azure = { ...DEV, TA_AZURE_OPENAI_ENDPOINT: 'https://x.openai.azure.com', TA_API_KEY: 'k' };
    expect(loadEnvConfig(azure).llm.azure).toEqual({ endpoint: 'https://x.openai.azure.com', apiVersion: '2024-10-21' });
    expect(loadEnvConfig({ ...azure, TA_API_VERSION: '2024-06-01' }).llm.azure?.apiVersion).toBe('2024-06-01');
    expect(loadEnvConfig({ ...azure, TA_API_VERSION: '2024-06-01', TA_AZURE_OPENAI_API_VERSION: '2025-01-01' }).llm.azure?.apiVersion).toBe('2025-01-01');
  });

  // One message per problem, naming the variable; never three messages for one bad value.
  it.each([
    [{ TA_PORT: 'abc' }, 'TA_PORT must be an integer from 0 to 65535 (got "abc")'],
    [{ TA_PORT: '70000' }, 'TA_PORT must be an integer from 0 to 65535 (got 70000)'],
    [{ TA_PORT: '80.5' }, 'TA_PORT must be an integer from 0 to 65535 (got "80.5")'],
    [{ TA_STATE_STORE: 'mysql' }, 'TA_STATE_STORE must be one of memory, redis, dynamodb, postgres (got "mysql")'],
    [{ TA_STATE_STORE: 'postgres' }, 'TA_POSTGRES_URL is required when TA_STATE_STORE=postgres (a postgres:// connection string)'],
    // The connection string may hold a password: never echoed.
    [{ TA_POSTGRES_URL: 'host=db password=hunter2' }, 'TA_POSTGRES_URL must be a postgres:// or postgresql:// connection string'],
    [{ TA_POSTGRES_SCHEMA: 'Teal-Agent' }, 'TA_POSTGRES_SCHEMA must be a schema name of a-z 0-9 _ (not starting with a digit, at most 63) (got "Teal-Agent")'],
    [{ TA_POSTGRES_POOL_MAX: '0' }, 'TA_POSTGRES_POOL_MAX must be an integer from 1 to 1000 (got 0)'],
    [{ TA_POSTGRES_ACQUIRE_TIMEOUT_MS: 'never' }, 'TA_POSTGRES_ACQUIRE_TIMEOUT_MS must be an integer >= 1 (got "never")'],
    [{ TA_POSTGRES_STATEMENT_TIMEOUT_MS: '0' }, 'TA_POSTGRES_STATEMENT_TIMEOUT_MS must be an integer >= 1 (got 0)'],
    [{ TA_POSTGRES_MIGRATE: 'always' }, 'TA_POSTGRES_MIGRATE must be one of auto, off (got "always")'],
    [{ TA_ARCHIVE_URL: 'mysql://db' }, 'TA_ARCHIVE_URL must be a postgres:// or postgresql:// connection string'],
    [{ TA_ARCHIVE_MAX_PAYLOAD_BYTES: '10' }, 'TA_ARCHIVE_MAX_PAYLOAD_BYTES must be an integer >= 256 (got 10)'],
    [
      { TA_ARCHIVE_URL: 'postgres://db/x', TA_POSTGRES_URL: 'postgres://db/x', TA_ARCHIVE_SCHEMA: 'same', TA_POSTGRES_SCHEMA: 'same' },
      'TA_ARCHIVE_SCHEMA must differ from TA_POSTGRES_SCHEMA when the archive is in the store\'s database (both are "same")',
    ],
    [{ TA_STATE_STORE: 'redis' }, 'TA_REDIS_URL is required when TA_STATE_STORE=redis (a redis:// or rediss:// URL)'],
    [{ TA_STATE_STORE: 'redis', TA_REDIS_URL: 'localhost:6379' }, 'TA_REDIS_URL must be a redis:// or rediss:// URL (got "localhost:6379")'],
    [{ TA_DYNAMODB_TABLE: 'ab' }, 'TA_DYNAMODB_TABLE must be 3 to 255 of A-Z a-z 0-9 _ . - (got "ab")'],
    [{ TA_DYNAMODB_CREATE_TABLE: 'maybe' }, 'TA_DYNAMODB_CREATE_TABLE must be true or false (also 1/0, yes/no, on/off) (got "maybe")'],
    [{ TA_DYNAMODB_ENDPOINT: 'localhost:8000' }, 'TA_DYNAMODB_ENDPOINT must be an http:// or https:// URL (got "localhost:8000")'],
    [{ TA_AUTH_MODE: 'none' }, 'TA_AUTH_MODE must be one of entra, dev (got "none")'],
    [
      { NODE_ENV: 'production' },
      'TA_AUTH_MODE=dev is refused when NODE_ENV=production (dev mode does not authenticate anyone; it runs only with NODE_ENV unset, development or test)',
    ],
    [{ TA_LOG_LEVEL: 'loud' }, 'TA_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (or warning, critical) (got "loud")'],
    [{ TA_BASE_URL: 'api.openai.com' }, 'TA_BASE_URL must be an http:// or https:// URL (got "api.openai.com")'],
    [{ TA_OTEL_ENDPOINT: 'collector:4318' }, 'TA_OTEL_ENDPOINT must be an http:// or https:// URL (got "collector:4318")'],
    [{ TA_METRICS_PROMETHEUS: 'sure' }, 'TA_METRICS_PROMETHEUS must be true or false (also 1/0, yes/no, on/off) (got "sure")'],
    [{ TA_LLM_MAX_RETRIES: '11' }, 'TA_LLM_MAX_RETRIES must be an integer from 0 to 10 (got 11)'],
    [{ TA_MAX_BODY_BYTES: '10' }, 'TA_MAX_BODY_BYTES must be an integer >= 1024 (got 10)'],
    [{ TA_TASK_LEASE_MS: 'soon' }, 'TA_TASK_LEASE_MS must be an integer >= 100 (got "soon")'],
    [{ TA_LEASE_SWEEP_MS: '-1' }, 'TA_LEASE_SWEEP_MS must be an integer >= 0 (got -1)'],
    [{ TA_WS_FIRST_MESSAGE_MS: '0' }, 'TA_WS_FIRST_MESSAGE_MS must be an integer >= 100 (got 0)'],
    [{ TA_WS_MAX_SOCKETS_PER_CALLER: '0' }, 'TA_WS_MAX_SOCKETS_PER_CALLER must be an integer >= 1 (got 0)'],
    [{ TA_ENTRA_AUDIENCE: ' , ' }, 'TA_ENTRA_AUDIENCE must be a comma- or space-separated list (got [])'],
    [
      { TA_BASE_URL: 'http://localhost:11434/v1', TA_AZURE_OPENAI_ENDPOINT: 'https://x.openai.azure.com' },
      'TA_BASE_URL and TA_AZURE_OPENAI_ENDPOINT are exclusive: set one provider',
    ],
  ])('%j is refused with one message naming the variable', (vars, message) => {
    expect(problemsOf({ ...DEV, ...vars })).toEqual([message]);
  });

  it.each(['Production', 'PRODUCTION', 'prod', 'staging', 'live'])('refuses dev mode with NODE_ENV=%s', (nodeEnv) => {
    expect(problemsOf({ ...DEV, NODE_ENV: nodeEnv })).toEqual([
      `TA_AUTH_MODE=dev is refused when NODE_ENV=${nodeEnv} (dev mode does not authenticate anyone; it runs only with NODE_ENV unset, development or test)`,
    ]);
  });

  it.each(['development', 'Development', 'test', 'TEST'])('allows dev mode with NODE_ENV=%s', (nodeEnv) => {
    expect(problemsOf({ ...DEV, NODE_ENV: nodeEnv })).toEqual([]);
  });

  it('listens on 127.0.0.1 in dev mode unless TA_HOST is set, on 0.0.0.0 in entra mode', () => {
    expect(loadEnvConfig({ ...DEV }).http.host).toBe('127.0.0.1');
    expect(loadEnvConfig({ ...DEV, TA_HOST: '0.0.0.0' }).http.host).toBe('0.0.0.0');
    expect(loadEnvConfig({ ...ENTRA }).http.host).toBe('0.0.0.0');
    expect(loadEnvConfig({ ...ENTRA, TA_HOST: '::1' }).http.host).toBe('::1');
  });

  it('requires a table and a region for DynamoDB, one message each', () => {
    expect(problemsOf({ ...DEV, TA_STATE_STORE: 'dynamodb' })).toEqual([
      'TA_DYNAMODB_TABLE is required when TA_STATE_STORE=dynamodb (the table name)',
      'AWS_REGION is required when TA_STATE_STORE=dynamodb',
    ]);
  });

  it('requires an audience and a tenant restriction in entra mode (the default)', () => {
    const mode = 'when TA_AUTH_MODE=entra, the default (TA_AUTH_MODE=dev is for local development)';
    expect(problemsOf({})).toEqual(
      expect.arrayContaining([
        `TA_ENTRA_AUDIENCE is required ${mode}: the aud tokens must carry`,
        `TA_ENTRA_TENANT_ID or TA_ENTRA_ALLOWED_TENANTS is required ${mode}: which tenants may call`,
      ]),
    );
    const allowed = { TA_ENTRA_AUDIENCE: 'api://teal', TA_ENTRA_ALLOWED_TENANTS: `${TENANT},${TENANT}`, TA_ENTRA_REQUIRED_ROLES: 'Agents.All' };
    expect(problemsOf(allowed)).toEqual([]);
    expect(problemsOf({ ...ENTRA, NODE_ENV: 'production' })).toEqual([]);
  });

  it('reads TA_FRONT_DOORS: every protocol by default, a list of them, anything else refused', () => {
    expect([...loadEnvConfig({ ...DEV }).frontDoors]).toEqual(['rest', 'agui', 'a2a', 'mcp', 'openai']);
    expect([...loadEnvConfig({ ...DEV, TA_FRONT_DOORS: 'rest, mcp' }).frontDoors]).toEqual(['rest', 'mcp']);
    expect(problemsOf({ ...DEV, TA_FRONT_DOORS: 'rest,grpc' })).toEqual([expect.stringContaining('TA_FRONT_DOORS')]);
  });

  it('reports every problem at once', () => {
    expect(problemsOf({ ...DEV, TA_PORT: '-1', TA_STATE_STORE: 'redis', TA_LOG_LEVEL: 'x', NODE_ENV: 'production' })).toHaveLength(4);
  });

  it('never echoes the API key in a message', () => {
    const err = (() => {
      try {
        loadEnvConfig({ ...DEV, TA_API_KEY: 'sk-secret', TA_PORT: 'x' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toContain('TA_PORT');
    expect(err?.message).not.toContain('sk-secret');
  });
});

describe('TA_AUDIT_LOG', () => {
  it('names the audit file; unset or empty, there is none', () => {
    expect(loadEnvConfig({ ...DEV, TA_AUDIT_LOG: '/var/log/ta/audit.jsonl' }).telemetry.auditLogPath).toBe('/var/log/ta/audit.jsonl');
    expect(loadEnvConfig({ ...DEV }).telemetry.auditLogPath).toBeUndefined();
    expect(loadEnvConfig({ ...DEV, TA_AUDIT_LOG: '' }).telemetry.auditLogPath).toBeUndefined();
  });
});

describe('TA_RATE_LIMIT_*', () => {
  it('are unset (no limit) by default and integers >= 1 when set', () => {
    expect(loadEnvConfig({ ...DEV }).rateLimits).toEqual({});
    const env = { ...DEV, TA_RATE_LIMIT_CALLER_RPM: '60', TA_RATE_LIMIT_AGENT_RPM: '600', TA_RATE_LIMIT_CALLER_CONCURRENCY: '4', TA_RATE_LIMIT_CALLER_TPM: '' };
    expect(loadEnvConfig(env).rateLimits).toEqual({ callerRpm: 60, agentRpm: 600, callerConcurrency: 4 });
    expect(() => loadEnvConfig({ ...DEV, TA_RATE_LIMIT_CALLER_TPM: '0' })).toThrow(/TA_RATE_LIMIT_CALLER_TPM/);
  });
});
