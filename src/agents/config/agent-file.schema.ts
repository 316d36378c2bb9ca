import { Transform, Type } from 'class-transformer';
import { ValidateIf, ValidateNested } from '../../common/validation/class-validator-parts';
import { AgentSpecConfig, SequentialTaskConfig } from './agent.schema';
import { AgentAuthConfig } from './auth.schema';
import { IsListOfMappings, IsMapping, IsOneOf, IsPathSegment, IsText, IsTextList, Optional, Rule } from './field-validators';
import { ConcurrencyConfig, GovernanceConfig } from './governance.schema';
import { LimitsConfig } from './limits.schema';
import { WebhookConfig } from './webhooks.schema';

export const API_VERSIONS = ['skagents/v1', 'skagents/v2alpha1', 'tealagents/v1alpha1'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

/**
 * The apiVersion an agent is served as. Upstream's app.py picks its V1 app for every `skagents/*`
 * version but v2alpha1 (its own tests use `skagents/v1alpha1`), so `skagents/v1alpha1` and the like
 * are read as `skagents/v1`, fields and all. Anything else is kept as written, for the schema to judge.
 */
export function servedApiVersion(value: unknown): unknown {
  return typeof value === 'string' && /^skagents\/[^/]+$/.test(value) && value !== 'skagents/v2alpha1' ? 'skagents/v1' : value;
}

/** Upstream's four `Base*` input types (a v1 agent may also name a custom type: src/agents/custom-types). */
export const BASE_INPUT_TYPES = ['BaseInput', 'BaseInputWithUserContext', 'BaseMultiModalInput', 'BaseMultiModalInputWithUserContext'] as const;
export type BaseInputType = (typeof BASE_INPUT_TYPES)[number];

/** A type name as `input_type` / `output_type` give it: a Python (and JS) identifier. */
const TYPE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const V1_KINDS = ['Chat', 'Agent', 'Sequential'] as const;

const isV1 = (o: AgentFileConfig) => o.apiVersion === 'skagents/v1';

/** `metadata.skills[]` (upstream `ConfigSkill`; extra keys allowed, as upstream). */
export class SkillConfig {
  @IsText() id!: string;
  @IsText() name!: string;
  @IsText() description!: string;
  @IsTextList() tags!: string[];
  @Optional() @IsTextList() examples?: string[];
  @Optional() @IsTextList() input_modes?: string[];
  @Optional() @IsTextList() output_modes?: string[];
}

/** Upstream `ConfigMetadata` (extra keys allowed). Its description wins over the top-level one. */
export class MetadataConfig {
  @IsText() description!: string;
  @Optional() @IsListOfMappings() @ValidateNested({ each: true }) @Type(() => SkillConfig) skills?: SkillConfig[];
  @Optional() @IsText() documentation_url?: string;
}

/**
 * `spec`. Its keys, and everything below, are checked strictly: an unknown key is an error
 * (CONFIG.md), so `temprature: 0.2` cannot silently fall back to the default.
 */
export class SpecConfig {
  /** Chat/Agent v1, v2alpha1 and tealagents: the one agent (presence is checked with the shape). */
  @Optional() @IsMapping() @ValidateNested() @Type(() => AgentSpecConfig) agent?: AgentSpecConfig;

  /** Sequential v1 only. */
  @Optional() @IsListOfMappings() @ValidateNested({ each: true }) @Type(() => AgentSpecConfig) agents?: AgentSpecConfig[];
  @Optional()
  @IsListOfMappings()
  @ValidateNested({ each: true })
  @Type(() => SequentialTaskConfig)
  tasks?: SequentialTaskConfig[];

  @Optional() @IsMapping() @ValidateNested() @Type(() => GovernanceConfig) governance?: GovernanceConfig;
  @Optional() @IsMapping() @ValidateNested() @Type(() => ConcurrencyConfig) concurrency?: ConcurrencyConfig;
  @Optional() @IsMapping() @ValidateNested() @Type(() => AgentAuthConfig) auth?: AgentAuthConfig;
  @Optional() @IsMapping() @ValidateNested() @Type(() => LimitsConfig) limits?: LimitsConfig;
  @Optional() @IsListOfMappings() @ValidateNested({ each: true }) @Type(() => WebhookConfig) webhooks?: WebhookConfig[];
}

/**
 * One agent YAML file, all three apiVersions (CONFIG.md, teal-agents.md §1). Unknown top-level keys
 * are kept, as upstream's `extra="allow"` does; `kind` is read only by skagents/v1.
 */
export class AgentFileConfig {
  @Transform(({ value }) => servedApiVersion(value))
  @IsOneOf(API_VERSIONS, { expected: `one of ${API_VERSIONS.join(', ')}, or another skagents/* version, served as skagents/v1` })
  apiVersion!: ApiVersion;

  /** The agent's name for skagents/v2alpha1 and tealagents/v1alpha1 (`/{name}/{version}`). */
  @ValidateIf((o: AgentFileConfig) => !isV1(o))
  @IsPathSegment({ required: 'is required (the agent name, a URL-safe string)' })
  name?: string;

  /** The agent's name for skagents/v1 (upstream reads `service_name` there, not `name`). */
  @ValidateIf(isV1)
  @IsPathSegment({ required: 'is required for skagents/v1 (the agent name; name is read only by the other apiVersions)' })
  service_name?: string;

  /** Kept as the YAML source text (`0.1` stays "0.1", `1.0` stays "1.0"). */
  @IsPathSegment({ expected: 'a version such as 0.1 or v1' }) version!: string;

  @Optional() @IsText() description?: string;
  @Optional() @IsMapping() @ValidateNested() @Type(() => MetadataConfig) metadata?: MetadataConfig;

  /** skagents/v1 only: picks the handler. Kept but ignored by the other apiVersions, as upstream. */
  @ValidateIf(isV1)
  @IsOneOf(V1_KINDS, { required: `is required for skagents/v1 (${V1_KINDS.join(', ')})` })
  kind?: string;

  /**
   * skagents/v1 only: the body type, one of the four Base* types or a custom type (src/agents/custom-types
   * finds it beside the file). v2alpha1 and tealagents have fixed bodies and ignore it.
   */
  @ValidateIf(isV1)
  @Rule('isInputType', (v) => typeof v === 'string' && TYPE_NAME.test(v), {
    expected: `one of ${BASE_INPUT_TYPES.join(', ')}, or the name of a custom type (custom_types.py, .ts or .js beside this file)`,
    required: `is required for skagents/v1 (one of ${BASE_INPUT_TYPES.join(', ')})`,
  })
  input_type?: string;

  /** The answer's type (structured output): a custom type, found as input_type is. Ignored by tealagents. */
  @Optional()
  @Rule('isOutputType', (v) => typeof v === 'string' && TYPE_NAME.test(v), {
    expected: 'the name of a custom type (custom_types.py, .ts or .js beside this file)',
  })
  output_type?: string;

  @IsMapping() @ValidateNested() @Type(() => SpecConfig) spec!: SpecConfig;

  [extra: string]: unknown;
}
