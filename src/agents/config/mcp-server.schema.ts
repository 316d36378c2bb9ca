import { ValidateIf } from '../../common/validation/class-validator-parts';
import {
  badItem,
  Defaulted,
  describeValue,
  IsBool,
  IsHttpUrl,
  IsNumberFrom,
  IsOneOf,
  IsPositiveNumber,
  IsText,
  IsTextList,
  IsTextMap,
  Optional,
  Rule,
} from './field-validators';
import { RISK_LEVELS, type RiskLevel } from './governance.schema';
import { RecordOf } from './validators';

/** `tool_governance_overrides.<tool>`: upstream's catalog governance fields, plus our `risk`. */
export class ToolGovernanceOverride {
  @Optional() @IsBool() requires_hitl?: boolean;
  @Optional() @IsOneOf(['low', 'medium', 'high']) cost?: 'low' | 'medium' | 'high';
  @Optional() @IsOneOf(['public', 'proprietary', 'confidential', 'sensitive']) data_sensitivity?: string;
  /** Ours: overrides the risk derived from MCP annotations. */
  @Optional() @IsOneOf(RISK_LEVELS) risk?: RiskLevel;
}

/** Shell metacharacters upstream refuses in a stdio `command` (it is not run through a shell here either). */
const SHELL_META = /[;&|`$]/;
const isStdio = (o: McpServerConfig) => o.transport === 'stdio';
const hasAuth = (o: McpServerConfig) => o.auth_server != null || o.scopes != null;

/**
 * `spec.agent.mcp_servers[]`: upstream `McpServerConfig` field for field (teal-agents.md §1.4),
 * with its rules (stdio needs a command free of `; & | \` $`, http needs an http(s) URL,
 * `auth_server` and `scopes` go together), plus our `forward_token`.
 */
export class McpServerConfig {
  /** Tools are exposed to the model as `{name}_{tool}`, so the name is restricted like a tool name. */
  @Rule('isMcpName', (v) => typeof v === 'string' && /^[A-Za-z0-9_-]+$/.test(v), {
    expected: 'a name of letters, digits, "_" and "-"',
  })
  name!: string;

  @Defaulted() @IsOneOf(['stdio', 'http']) transport: 'stdio' | 'http' = 'stdio';

  // stdio
  @ValidateIf((o: McpServerConfig) => isStdio(o) || o.command != null)
  @Rule('isSafeCommand', (v) => typeof v === 'string' && v.trim() !== '' && !SHELL_META.test(v), {
    expected: 'a command line',
    required: 'is required for the stdio transport (the program to start)',
    explain: (v) => (typeof v === 'string' && SHELL_META.test(v) ? `must not contain any of ; & | \` $ (got ${describeValue(v)})` : undefined),
  })
  command?: string;
  @Optional()
  @Rule('isArgList', (v) => Array.isArray(v) && v.every((a) => typeof a === 'string'), {
    expected: 'a list of strings (quote numbers)',
    explain: badItem((a) => typeof a === 'string', 'a string (quote numbers)'),
  })
  args?: string[];
  @Optional() @IsTextMap() env?: Record<string, string>;

  // http
  @ValidateIf((o: McpServerConfig) => o.transport === 'http' || o.url != null)
  @IsHttpUrl({ required: 'is required for the http transport (an http:// or https:// URL)' })
  url?: string;
  @Optional() @IsTextMap() headers?: Record<string, string>;
  /** Seconds; upstream's default is 30 for http. */
  @Optional() @IsPositiveNumber() timeout?: number;
  /** Seconds; upstream's default is 300. */
  @Optional() @IsPositiveNumber() sse_read_timeout?: number;
  @Optional() @IsBool() verify_ssl?: boolean;

  // auth: an authorization server is useless without scopes to ask it for, and the reverse.
  @ValidateIf(hasAuth)
  @IsHttpUrl({ required: 'is required when scopes is given (auth_server and scopes go together)' })
  auth_server?: string;
  @ValidateIf(hasAuth)
  @IsTextList({ required: 'is required when auth_server is given (auth_server and scopes go together)' })
  scopes?: string[];

  // governance
  @Optional()
  @RecordOf(ToolGovernanceOverride)
  tool_governance_overrides?: Map<string, ToolGovernanceOverride>;
  @Optional() @IsOneOf(['trusted', 'sandboxed', 'untrusted']) trust_level?: 'trusted' | 'sandboxed' | 'untrusted';
  /** Seconds per MCP request; upstream's default is 30. */
  @Optional() @IsPositiveNumber() request_timeout?: number;

  // user id injection
  @Optional() @IsText() user_id_header?: string;
  /**
   * Ours: header that carries the caller's tenant id, so a multi-tenant server can tell tenants
   * apart (an owner id alone is only unique within its tenant). With `user_id_header`, both go on
   * every call.
   */
  @Optional()
  @Rule('isTenantHeader', (v, o) => typeof v === 'string' && v.trim() !== '' && v.toLowerCase() !== (o as McpServerConfig).user_id_header?.toLowerCase(), {
    expected: 'a header name other than user_id_header',
  })
  tenant_id_header?: string;
  @Optional() @IsOneOf(['auth', 'env']) user_id_source?: 'auth' | 'env';
  @ValidateIf((o: McpServerConfig) => o.user_id_source === 'env' || o.user_id_env_var != null)
  @IsText({ required: 'is required when user_id_source is env (the variable holding the user id)' })
  user_id_env_var?: string;

  // OAuth (accepted for compatibility; docs/configuration.md says what is implemented)
  @Optional() @IsText() oauth_client_id?: string;
  @Optional() @IsText() oauth_client_secret?: string;
  @Optional() @IsText() canonical_uri?: string;
  @Optional() @IsBool() enable_dynamic_registration?: boolean;
  @Optional() @IsText() protocol_version?: string;
  @Optional() @IsBool() enable_metadata_discovery?: boolean;
  /** Seconds. */
  @Optional() @IsNumberFrom(0) metadata_cache_ttl?: number;

  /** Ours: send the caller's bearer token to this server (never by default). */
  @Optional() @IsBool() forward_token?: boolean;

  /**
   * Ours: the server is part of readiness (`GET /health/ready`, at the root and the agent's): while
   * it does not answer a ping, the process reports not ready (503).
   */
  @Optional() @IsBool() required?: boolean;
}
