import { Transform } from 'class-transformer';
import { IsOptional, IsString } from '../common/validation/class-validator-parts';
import { LOG_LEVELS, toLogLevel } from '../common/logging/logger';
import { CORS_ORIGINS_EXPECTED, isCorsOriginList } from '../common/http/cors-policy';
import { GUID } from '../common/validation/guid';
import { EnvBool, EnvInt, EnvList, EnvOneOf, EnvRule, EnvUrl, toBool, toInt, toList } from './env-validators';

/** The protocols an agent can be served on (TA_FRONT_DOORS). */
export const FRONT_DOORS = ['rest', 'agui', 'a2a', 'mcp', 'openai'] as const;
export type FrontDoor = (typeof FRONT_DOORS)[number];

/**
 * Every environment variable the server reads (docs/configuration.md). Validated once at boot, each
 * variable on its own here; the rules between variables (redis needs a URL, ...) are in
 * env-combinations.ts. Every problem stops the boot with a message naming the variable.
 */
export class EnvVars {
  @IsOptional() @IsString() TA_SERVICE_CONFIG?: string;
  /** Reload the agents when a file of TA_SERVICE_CONFIG changes (src/reload); SIGHUP reloads either way. */
  @IsOptional() @Transform(toBool) @EnvBool() TA_CONFIG_WATCH = false;
  @IsOptional() @Transform(toInt) @EnvInt(0, 65535) TA_PORT = 8000;
  /** Unset: 0.0.0.0, or 127.0.0.1 with TA_AUTH_MODE=dev (env.config.ts). */
  @IsOptional() @IsString() TA_HOST?: string;

  // model provider
  /** Never echoed in a message. */
  @IsOptional() @EnvRule((v) => typeof v === 'string', 'a string', { secret: true }) TA_API_KEY?: string;
  @IsOptional() @EnvUrl() TA_BASE_URL?: string;
  @IsOptional() @EnvUrl() TA_AZURE_OPENAI_ENDPOINT?: string;
  /** Upstream's name for the Azure API version; TA_AZURE_OPENAI_API_VERSION wins when both are set. */
  @IsOptional() @IsString() TA_API_VERSION?: string;
  @IsOptional() @IsString() TA_AZURE_OPENAI_API_VERSION?: string;
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_LLM_TIMEOUT_MS = 120_000;
  @IsOptional() @Transform(toInt) @EnvInt(0, 10) TA_LLM_MAX_RETRIES = 2;

  // HTTP
  @IsOptional() @Transform(toInt) @EnvInt(1024) TA_MAX_BODY_BYTES = 10 * 1024 * 1024;
  /** 0 turns the SSE keepalive comments off. */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_SSE_KEEPALIVE_MS = 15_000;
  /** On SIGTERM/SIGINT, how long running requests get to finish before they are failed as `shutdown` (src/common/shutdown). */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_SHUTDOWN_GRACE_MS = 25_000;
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_STREAM_LOG_MAX_BYTES = 1_048_576;
  /** The per-process replay log of v3 streams (src/tasks/events/task-event-log.service.ts): every stream's events together. */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_STREAM_REPLAY_MAX_BYTES = 64 * 1_048_576;
  /** One stream's events in that log; past it the oldest are dropped (a reconnect from there gets the outcome). */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_STREAM_REPLAY_STREAM_MAX_BYTES = 1_048_576;
  /** How long a finished stream stays replayable from that log. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_STREAM_REPLAY_TTL_SECONDS = 300;
  /** Concurrent reconnected streams that follow the store (a request running elsewhere), per caller and per replica. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_STREAM_REPLAY_MAX_PER_CALLER = 8;
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_STREAM_REPLAY_MAX_PER_REPLICA = 256;
  /** A `/stream` WebSocket whose input (its first message) has not come this long after the upgrade is closed (1008). */
  @IsOptional() @Transform(toInt) @EnvInt(100) TA_WS_FIRST_MESSAGE_MS = 10_000;
  /** `/stream` WebSockets open at once per caller (tenant and owner) on one replica; one more is closed (1013). */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_WS_MAX_SOCKETS_PER_CALLER = 20;
  /** The protocols every agent is served on (docs/api.md, "Front doors"): any of rest, agui, a2a, mcp, openai. */
  @IsOptional()
  @Transform(toList)
  @EnvRule((v) => Array.isArray(v) && v.length > 0 && v.every((d) => (FRONT_DOORS as readonly unknown[]).includes(d)), `a list of ${FRONT_DOORS.join(', ')}`)
  TA_FRONT_DOORS: FrontDoor[] = [...FRONT_DOORS];
  /** The agent whose A2A card `GET /.well-known/agent-card.json` serves (docs/a2a.md): `name/version` or `name:version`. Unset: 404. */
  @IsOptional()
  @EnvRule((v) => typeof v === 'string' && /^[^/:\s]+[/:][^/:\s]+$/.test(v), 'name/version or name:version')
  TA_A2A_DEFAULT_AGENT?: string;
  /** Origins browsers may call from (src/common/http/cors-policy.ts); `*` only with TA_AUTH_MODE=dev. Unset: none. */
  @IsOptional() @Transform(toList) @EnvRule(isCorsOriginList, CORS_ORIGINS_EXPECTED) TA_CORS_ORIGINS?: string[];

  // rate limits (src/rate-limit); unset: no limit. Per agent, overridden by its `spec.limits`.
  /** Requests per minute of one caller (tenant, owner) to one agent. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_RATE_LIMIT_CALLER_RPM?: number;
  /** Requests per minute to one agent, all callers together. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_RATE_LIMIT_AGENT_RPM?: number;
  /** Requests of one caller to one agent running at once. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_RATE_LIMIT_CALLER_CONCURRENCY?: number;
  /** Model tokens per minute of one caller to one agent. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_RATE_LIMIT_CALLER_TPM?: number;

  // telemetry and logs
  /** OTLP/HTTP collector base URL (traces go to `{endpoint}/v1/traces`). */
  @IsOptional() @EnvUrl() TA_OTEL_ENDPOINT?: string;
  /** `true`: `GET /metrics` serves the metrics in the Prometheus text format (src/telemetry/metrics.controller.ts). */
  @IsOptional() @Transform(toBool) @EnvBool() TA_METRICS_PROMETHEUS = false;
  @IsOptional()
  @Transform(({ value }) => toLogLevel(value) ?? value)
  @EnvOneOf(LOG_LEVELS, `one of ${LOG_LEVELS.join(', ')} (or warning, critical)`)
  TA_LOG_LEVEL = 'info';
  /** A file the audit records are appended to as JSON lines too (src/common/logging/audit-log.ts). */
  @IsOptional() @IsString() TA_AUDIT_LOG?: string;

  // state
  @IsOptional() @EnvOneOf(['memory', 'redis', 'dynamodb', 'postgres']) TA_STATE_STORE: 'memory' | 'redis' | 'dynamodb' | 'postgres' = 'memory';
  @IsOptional() @EnvUrl(['redis', 'rediss']) TA_REDIS_URL?: string;
  /** A libpq connection string; never echoed in a message (it may hold a password). PG* variables fill in what it leaves out. */
  @IsOptional()
  @EnvRule((v) => typeof v === 'string' && /^postgres(ql)?:\/\/\S*$/i.test(v), 'a postgres:// or postgresql:// connection string', { secret: true })
  TA_POSTGRES_URL?: string;
  /** The schema of the store's tables (an unquoted identifier: src/state/backends/postgres/postgres-keys.ts). */
  @IsOptional()
  @EnvRule((v) => typeof v === 'string' && /^[a-z_][a-z0-9_]{0,62}$/.test(v), 'a schema name of a-z 0-9 _ (not starting with a digit, at most 63)')
  TA_POSTGRES_SCHEMA = 'teal_agent';
  @IsOptional() @Transform(toInt) @EnvInt(1, 1000) TA_POSTGRES_POOL_MAX = 10;
  /** How long a call waits for a pooled connection (or a new one to connect) before it is a 503 STATE_STORE_UNAVAILABLE. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_POSTGRES_ACQUIRE_TIMEOUT_MS = 2000;
  /** The server's statement_timeout for the store's statements. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_POSTGRES_STATEMENT_TIMEOUT_MS = 5000;
  /** `auto`: apply missing migrations at boot; `off`: only check the schema (run `teal-agent-server migrate` from a deploy job). */
  @IsOptional() @EnvOneOf(['auto', 'off']) TA_POSTGRES_MIGRATE: 'auto' | 'off' = 'auto';
  /** Named prepared statements for the commit (false: every statement unnamed, for poolers that cannot keep them). */
  @IsOptional() @Transform(toBool) @EnvBool() TA_POSTGRES_PREPARED_STATEMENTS = true;
  /** Commits pipelined on one of the pool's connections (false: every statement on a pooled connection of its own). */
  @IsOptional() @Transform(toBool) @EnvBool() TA_POSTGRES_PIPELINE = true;
  /** DynamoDB's own rule for table names. */
  @IsOptional()
  @EnvRule((v) => typeof v === 'string' && /^[A-Za-z0-9_.-]{3,255}$/.test(v), '3 to 255 of A-Z a-z 0-9 _ . -')
  TA_DYNAMODB_TABLE?: string;
  @IsOptional() @EnvUrl() TA_DYNAMODB_ENDPOINT?: string;
  @IsOptional() @Transform(toBool) @EnvBool() TA_DYNAMODB_CREATE_TABLE = false;
  @IsOptional() @IsString() AWS_REGION?: string;
  /** How long a running request holds its task; renewed while it runs, so only a dead process lets it lapse. */
  @IsOptional() @Transform(toInt) @EnvInt(100) TA_TASK_LEASE_MS = 30_000;
  /** How often each replica sweeps the lease index for dead processes' requests (src/tasks/run/lease-sweeper.service.ts); 0: never. */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_LEASE_SWEEP_MS = 5_000;
  /** Tasks expire this many seconds after their last write (unset: never). */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_TASK_TTL_SECONDS?: number;
  /** How long an `Idempotency-Key` is remembered, in seconds (src/tasks/idempotency/; docs/api.md, Retries with Idempotency-Key). */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_IDEMPOTENCY_TTL_SECONDS = 86_400;
  /** The task writer's cache of the tasks this replica wrote, in bytes of request JSON (0: none; src/tasks/writer/task-cache.ts). */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_TASK_CACHE_MAX_BYTES = 16 * 1024 * 1024;

  // the audit archive (docs/archive.md)
  /** A PostgreSQL connection string for the audit archive (unset: no archive); may be the store's own database. Never echoed. */
  @IsOptional()
  @EnvRule((v) => typeof v === 'string' && /^postgres(ql)?:\/\/\S*$/i.test(v), 'a postgres:// or postgresql:// connection string', { secret: true })
  TA_ARCHIVE_URL?: string;
  /** The archive's schema (an unquoted identifier). */
  @IsOptional()
  @EnvRule((v) => typeof v === 'string' && /^[a-z_][a-z0-9_]{0,62}$/.test(v), 'a schema name of a-z 0-9 _ (not starting with a digit, at most 63)')
  TA_ARCHIVE_SCHEMA = 'teal_archive';
  /** The most a text in an archived event keeps (arguments, results, messages); longer ones are cut and marked. */
  @IsOptional() @Transform(toInt) @EnvInt(256) TA_ARCHIVE_MAX_PAYLOAD_BYTES = 64 * 1024;
  /** Days an archived event is kept; older ones are purged in bounded batches. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_ARCHIVE_RETENTION_DAYS = 365;
  /** How often each replica purges events older than the retention, in bounded batches (0: never; jittered to 75–100 %). */
  @IsOptional() @Transform(toInt) @EnvInt(0, 2_147_483_647) TA_ARCHIVE_RETENTION_SWEEP_MS = 3_600_000;
  /** Tasks a replica's archive queue holds at most; a commit beyond it is left to the catch-up. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_ARCHIVE_QUEUE_MAX = 10_000;
  /** How often each replica's catch-up reads the archive index (0: never). */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_ARCHIVE_CATCHUP_MS = 10_000;
  /** How old an index entry must be before the catch-up takes it (the queue's drain normally clears it within milliseconds). */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_ARCHIVE_GRACE_MS = 5_000;
  @IsOptional() @Transform(toInt) @EnvInt(1, 1000) TA_ARCHIVE_POOL_MAX = 4;
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_ARCHIVE_STATEMENT_TIMEOUT_MS = 5000;
  /** The app role that reads a whole tenant's archive (`GET /audit/events`). */
  @IsOptional() @IsString() TA_AUDIT_ROLE = 'Agents.Audit';
  /** The app role that erases a person's data (`DELETE /admin/principals/{oid}`). */
  @IsOptional() @IsString() TA_ADMIN_ROLE = 'Agents.Admin';

  // webhooks (docs/webhooks.md)
  /** Webhooks may reach loopback, private and CGNAT addresses (tests, in-cluster receivers); link-local and metadata ones stay refused. */
  @IsOptional() @Transform(toBool) @EnvBool() TA_WEBHOOK_ALLOW_PRIVATE = false;
  /** A webhook delivery is retried for this many hours after its event, then dead. */
  @IsOptional() @Transform(toInt) @EnvInt(1, 720) TA_WEBHOOK_RETRY_HOURS = 24;
  /** One webhook delivery attempt at most (lookup, connect, TLS, the answer's status), in ms; an attempt's claim is 3 times it plus 1 s. */
  @IsOptional() @Transform(toInt) @EnvInt(100, 120_000) TA_WEBHOOK_TIMEOUT_MS = 10_000;

  // tools (docs/tools.md)
  /** Per call attempt of a tool, unless its MCP server sets request_timeout or its plugin timeout_ms. */
  @IsOptional() @Transform(toInt) @EnvInt(1) TA_TOOL_TIMEOUT_MS = 30_000;
  /** Extra attempts after a transient tool failure (timeouts and resets only for idempotent tools). */
  @IsOptional() @Transform(toInt) @EnvInt(0, 10) TA_TOOL_MAX_RETRIES = 2;
  /** First retry delay; doubled for each further attempt. */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_TOOL_RETRY_BASE_MS = 200;
  /** A plugin module (.ts/.js/.cjs/.mjs), or a directory of them (upstream: the custom_plugins.py path). */
  @IsOptional() @IsString() TA_PLUGIN_MODULE?: string;
  /** The remote (OpenAPI) plugin catalog YAML. */
  @IsOptional() @IsString() TA_REMOTE_PLUGIN_PATH?: string;
  /** Upstream's plugin catalog JSON: governance (requires_hitl, risk) per `plugin-function`. */
  @IsOptional() @IsString() TA_PLUGIN_CATALOG_FILE?: string;
  /** The interpreter of the Python plugin host (docs/python-plugins.md): a virtual environment's `bin/python` brings the plugins' dependencies. */
  @IsOptional() @IsString() TA_PYTHON = 'python3';
  /** `off`: an agent naming a Python plugin class is refused at boot, as before the plugin host. */
  @IsOptional() @EnvOneOf(['on', 'off']) TA_PYTHON_PLUGINS: 'on' | 'off' = 'on';
  /** Calls in flight at once per Python plugin host (one host per plugin module); more wait, within their timeout. */
  @IsOptional() @Transform(toInt) @EnvInt(1, 256) TA_PYTHON_PLUGIN_CONCURRENCY = 8;

  // identity
  @IsOptional() @EnvOneOf(['entra', 'dev']) TA_AUTH_MODE: 'entra' | 'dev' = 'entra';
  /** A GUID: it is compared with the `tid` claim (a domain name would never match). */
  @IsOptional() @EnvRule((v) => typeof v === 'string' && GUID.test(v), 'a tenant id (GUID)') TA_ENTRA_TENANT_ID?: string;
  @IsOptional() @Transform(toList) @EnvList() TA_ENTRA_AUDIENCE?: string[];
  @IsOptional()
  @Transform(toList)
  @EnvRule((v) => Array.isArray(v) && v.length > 0 && v.every((t) => GUID.test(t)), 'a list of tenant ids (GUIDs)')
  TA_ENTRA_ALLOWED_TENANTS?: string[];
  @IsOptional() @Transform(toList) @EnvList() TA_ENTRA_REQUIRED_SCOPES?: string[];
  @IsOptional() @Transform(toList) @EnvList() TA_ENTRA_REQUIRED_ROLES?: string[];
  @IsOptional() @EnvUrl() TA_ENTRA_AUTHORITY = 'https://login.microsoftonline.com';
  /** Tolerance for `exp`/`nbf` against this server's clock. */
  @IsOptional() @Transform(toInt) @EnvInt(0, 300) TA_ENTRA_CLOCK_SKEW_SECONDS = 60;
  /** At most one JWKS refetch per this interval for tokens with an unknown `kid` (rate limit). */
  @IsOptional() @Transform(toInt) @EnvInt(0) TA_ENTRA_JWKS_COOLDOWN_MS = 30_000;
  /** Timeout of each metadata/JWKS request; past it the request answers 503. */
  @IsOptional() @Transform(toInt) @EnvInt(100) TA_ENTRA_IDP_TIMEOUT_MS = 5_000;

  /** The web console at `/console` (docs/console.md); `false` turns it off. */
  @IsOptional() @Transform(toBool) @EnvBool() TA_CONSOLE = true;
  /** Entra app (client) id the console signs in with through MSAL's redirect flow; unset: paste a token. */
  @IsOptional() @IsString() TA_CONSOLE_CLIENT_ID?: string;
  /** Scopes the console asks MSAL for (default `api://{TA_ENTRA_AUDIENCE[0]}/.default` when an audience is set). */
  @IsOptional() @Transform(toList) @EnvList() TA_CONSOLE_SCOPES?: string[];

  @IsOptional() @IsString() NODE_ENV?: string;
}
