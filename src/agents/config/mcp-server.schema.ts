import {
  IsBoolean,
  IsIn,
  IsNumber,
  IsOptional,
  IsPositive,
  IsString,
  Matches,
  MinLength,
  ValidateIf,
} from 'class-validator';
import { IsStringRecord, RecordOf } from './validators';
import { RISK_LEVELS, type RiskLevel } from './governance.schema';

export class ToolGovernanceOverride {
  @IsOptional() @IsBoolean() requires_hitl?: boolean;
  @IsOptional() @IsIn(['low', 'medium', 'high']) cost?: 'low' | 'medium' | 'high';
  @IsOptional() @IsIn(['public', 'proprietary', 'confidential', 'sensitive']) data_sensitivity?: string;
  /** Ours: overrides the risk derived from MCP annotations. */
  @IsOptional() @IsIn(RISK_LEVELS) risk?: RiskLevel;
}

/** Upstream `McpServerConfig`, field for field (teal-agents.md §1.4), plus `forward_token`. */
export class McpServerConfig {
  @IsString() @Matches(/^[A-Za-z0-9_-]+$/, { message: 'name may contain only letters, digits, "_" and "-"' })
  name!: string;

  @IsOptional() @IsIn(['stdio', 'http']) transport: 'stdio' | 'http' = 'stdio';

  // stdio
  @ValidateIf((o: McpServerConfig) => o.transport === 'stdio' || o.command !== undefined)
  @IsString({ message: 'command is required for the stdio transport' })
  @MinLength(1, { message: 'command is required for the stdio transport' })
  @Matches(/^[^;&|`$]*$/, { message: 'command must not contain any of ; & | ` $' })
  command?: string;
  @IsOptional() @IsString({ each: true }) args?: string[];
  @IsOptional() @IsStringRecord() env?: Record<string, string>;

  // http
  @ValidateIf((o: McpServerConfig) => o.transport === 'http' || o.url !== undefined)
  @Matches(/^https?:\/\/\S+$/, { message: 'url must be an http(s):// URL (required for the http transport)' })
  url?: string;
  @IsOptional() @IsStringRecord() headers?: Record<string, string>;
  @IsOptional() @IsNumber() @IsPositive() timeout?: number;
  @IsOptional() @IsNumber() @IsPositive() sse_read_timeout?: number;
  @IsOptional() @IsBoolean() verify_ssl?: boolean;

  // auth
  @ValidateIf((o: McpServerConfig) => o.auth_server !== undefined || o.scopes !== undefined)
  @IsString({ message: 'auth_server and scopes must be given together' })
  auth_server?: string;
  @ValidateIf((o: McpServerConfig) => o.auth_server !== undefined || o.scopes !== undefined)
  @IsString({ each: true, message: 'auth_server and scopes must be given together' })
  scopes?: string[];

  // governance
  @IsOptional() @RecordOf(ToolGovernanceOverride)
  tool_governance_overrides?: Map<string, ToolGovernanceOverride>;
  @IsOptional() @IsIn(['trusted', 'sandboxed', 'untrusted']) trust_level?: 'trusted' | 'sandboxed' | 'untrusted';
  @IsOptional() @IsNumber() @IsPositive() request_timeout?: number;

  // user id injection
  @IsOptional() @IsString() user_id_header?: string;
  @IsOptional() @IsIn(['auth', 'env']) user_id_source?: 'auth' | 'env';
  @IsOptional() @IsString() user_id_env_var?: string;

  // OAuth (accepted for compatibility; see README for what is implemented)
  @IsOptional() @IsString() oauth_client_id?: string;
  @IsOptional() @IsString() oauth_client_secret?: string;
  @IsOptional() @IsString() canonical_uri?: string;
  @IsOptional() @IsBoolean() enable_dynamic_registration?: boolean;
  @IsOptional() @IsString() protocol_version?: string;
  @IsOptional() @IsBoolean() enable_metadata_discovery?: boolean;
  @IsOptional() @IsNumber() metadata_cache_ttl?: number;

  /** Ours: send the caller's bearer token to this server (never by default). */
  @IsOptional() @IsBoolean() forward_token?: boolean;
}
