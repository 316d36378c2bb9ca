import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength, ValidateIf } from 'class-validator';
import { LOG_LEVELS, toLogLevel } from '../common/logging/logger';

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value);
const toBool = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? (/^(1|true|yes|on)$/i.test(value) ? true : /^(0|false|no|off)$/i.test(value) ? false : value) : value;
const toList = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.split(/[\s,]+/).filter(Boolean) : value;

/**
 * Every environment variable the server reads (README "Environment"). Validated once at boot; an
 * invalid value or combination stops the boot with a message naming the variable.
 */
export class EnvVars {
  @IsOptional() @IsString() TA_SERVICE_CONFIG?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(65535) TA_PORT = 8000;
  @IsOptional() @IsString() TA_HOST = '0.0.0.0';

  // model provider
  @IsOptional() @IsString() TA_API_KEY?: string;
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'TA_BASE_URL must be an http(s) URL' }) TA_BASE_URL?: string;
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'TA_AZURE_OPENAI_ENDPOINT must be an http(s) URL' })
  TA_AZURE_OPENAI_ENDPOINT?: string;
  /** Upstream's name for the Azure API version; TA_AZURE_OPENAI_API_VERSION wins when both are set. */
  @IsOptional() @IsString() TA_API_VERSION?: string;
  @IsOptional() @IsString() TA_AZURE_OPENAI_API_VERSION?: string;
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) TA_LLM_TIMEOUT_MS = 120_000;
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(10) TA_LLM_MAX_RETRIES = 2;

  // HTTP
  @IsOptional() @Transform(toInt) @IsInt() @Min(1024) TA_MAX_BODY_BYTES = 10 * 1024 * 1024;
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) TA_SSE_KEEPALIVE_MS = 15_000;

  // telemetry and logs
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'TA_OTEL_ENDPOINT must be an http(s) URL (OTLP/HTTP)' })
  TA_OTEL_ENDPOINT?: string;
  @IsOptional() @Transform(({ value }) => toLogLevel(value) ?? value)
  @IsIn(LOG_LEVELS, { message: `TA_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (or warning, critical)` })
  TA_LOG_LEVEL = 'info';

  // state
  @IsOptional() @IsIn(['memory', 'redis', 'dynamodb'], { message: 'TA_STATE_STORE must be one of memory, redis, dynamodb' })
  TA_STATE_STORE: 'memory' | 'redis' | 'dynamodb' = 'memory';
  @ValidateIf((o: EnvVars) => o.TA_STATE_STORE === 'redis')
  @Matches(/^rediss?:\/\/\S+$/, { message: 'TA_REDIS_URL (redis:// or rediss://) is required when TA_STATE_STORE=redis' })
  TA_REDIS_URL?: string;
  @ValidateIf((o: EnvVars) => o.TA_STATE_STORE === 'dynamodb')
  @IsString({ message: 'TA_DYNAMODB_TABLE is required when TA_STATE_STORE=dynamodb' })
  @MinLength(3, { message: 'TA_DYNAMODB_TABLE must be at least 3 characters' })
  TA_DYNAMODB_TABLE?: string;
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'TA_DYNAMODB_ENDPOINT must be an http(s) URL' })
  TA_DYNAMODB_ENDPOINT?: string;
  @IsOptional() @Transform(toBool) @IsIn([true, false], { message: 'TA_DYNAMODB_CREATE_TABLE must be true or false' })
  TA_DYNAMODB_CREATE_TABLE = false;
  @ValidateIf((o: EnvVars) => o.TA_STATE_STORE === 'dynamodb')
  @IsString({ message: 'AWS_REGION is required when TA_STATE_STORE=dynamodb' })
  AWS_REGION?: string;

  /** How long a running request holds its task; renewed while it runs, so only a dead process lets it lapse. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(100) TA_TASK_LEASE_MS = 30_000;
  /** Tasks expire this many seconds after their last write (unset: never). */
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) TA_TASK_TTL_SECONDS?: number;

  // identity
  @IsOptional() @IsIn(['entra', 'dev'], { message: 'TA_AUTH_MODE must be entra or dev' }) TA_AUTH_MODE: 'entra' | 'dev' = 'entra';
  @IsOptional() @IsString() TA_ENTRA_TENANT_ID?: string;
  @IsOptional() @Transform(toList) @IsString({ each: true }) TA_ENTRA_AUDIENCE?: string[];
  @IsOptional() @Transform(toList) @IsString({ each: true }) TA_ENTRA_ALLOWED_TENANTS?: string[];
  @IsOptional() @Transform(toList) @IsString({ each: true }) TA_ENTRA_REQUIRED_SCOPES?: string[];
  @IsOptional() @Transform(toList) @IsString({ each: true }) TA_ENTRA_REQUIRED_ROLES?: string[];
  @IsOptional() @Matches(/^https?:\/\/\S+$/, { message: 'TA_ENTRA_AUTHORITY must be an http(s) URL' })
  TA_ENTRA_AUTHORITY = 'https://login.microsoftonline.com';

  @IsOptional() @IsString() NODE_ENV?: string;
}
