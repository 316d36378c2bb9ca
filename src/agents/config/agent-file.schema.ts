import { Type } from 'class-transformer';
import {
  IsArray,
  IsEmpty,
  IsIn,
  IsOptional,
  IsString,
  Matches,
  MinLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { AgentSpecConfig, SequentialTaskConfig } from './agent.schema';
import { ConcurrencyConfig, GovernanceConfig } from './governance.schema';

export const API_VERSIONS = ['skagents/v1', 'skagents/v2alpha1', 'tealagents/v1alpha1'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

/** The four upstream `Base*` input types a v1 agent may declare (custom Python types are out of scope). */
export const BASE_INPUT_TYPES = [
  'BaseInput',
  'BaseInputWithUserContext',
  'BaseMultiModalInput',
  'BaseMultiModalInputWithUserContext',
] as const;
export type BaseInputType = (typeof BASE_INPUT_TYPES)[number];

const PATH_SEGMENT = /^[A-Za-z0-9._~-]+$/;
const PATH_SEGMENT_MESSAGE = 'may contain only letters, digits and . _ ~ - (it becomes a URL path segment)';

export class SkillConfig {
  @IsString() id!: string;
  @IsString() name!: string;
  @IsString() description!: string;
  @IsArray() @IsString({ each: true }) tags!: string[];
  @IsOptional() @IsArray() @IsString({ each: true }) examples?: string[];
  @IsOptional() @IsArray() @IsString({ each: true }) input_modes?: string[];
  @IsOptional() @IsArray() @IsString({ each: true }) output_modes?: string[];
}

export class MetadataConfig {
  @IsString() description!: string;
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => SkillConfig) skills?: SkillConfig[];
  @IsOptional() @IsString() documentation_url?: string;
}

export class SpecConfig {
  /** Chat/Agent v1, v2alpha1 and tealagents: the one agent. */
  @ValidateIf((o: SpecConfig) => o.agents === undefined)
  @ValidateNested()
  @Type(() => AgentSpecConfig)
  agent?: AgentSpecConfig;

  /** Sequential v1 only. */
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => AgentSpecConfig) agents?: AgentSpecConfig[];
  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => SequentialTaskConfig) tasks?: SequentialTaskConfig[];

  @IsOptional() @ValidateNested() @Type(() => GovernanceConfig) governance?: GovernanceConfig;
  @IsOptional() @ValidateNested() @Type(() => ConcurrencyConfig) concurrency?: ConcurrencyConfig;
}

/**
 * One agent YAML file, all three apiVersions (CONFIG.md). Unknown top-level keys (such as `kind` on
 * tealagents) are kept, as upstream does.
 */
export class AgentFileConfig {
  @IsIn(API_VERSIONS, { message: `apiVersion must be one of ${API_VERSIONS.join(', ')}` }) apiVersion!: ApiVersion;

  @ValidateIf((o: AgentFileConfig) => o.apiVersion !== 'skagents/v1')
  @IsString({ message: 'name is required' })
  @Matches(PATH_SEGMENT, { message: `name ${PATH_SEGMENT_MESSAGE}` })
  name?: string;

  @ValidateIf((o: AgentFileConfig) => o.apiVersion === 'skagents/v1')
  @IsString({ message: 'service_name is required for skagents/v1' })
  @Matches(PATH_SEGMENT, { message: `service_name ${PATH_SEGMENT_MESSAGE}` })
  service_name?: string;

  /** Kept as the YAML source text (`0.1` stays "0.1", `1.0` stays "1.0"). */
  @IsString({ message: 'version is required' })
  @MinLength(1)
  @Matches(PATH_SEGMENT, { message: `version ${PATH_SEGMENT_MESSAGE}` })
  version!: string;

  @IsOptional() @IsString() description?: string;
  @IsOptional() @ValidateNested() @Type(() => MetadataConfig) metadata?: MetadataConfig;

  /** Required for skagents/v1 (it picks the handler); kept but ignored by the other apiVersions, as upstream. */
  @ValidateIf((o: AgentFileConfig) => o.apiVersion === 'skagents/v1')
  @IsIn(['Chat', 'Agent', 'Sequential'], { message: 'kind must be one of Chat, Agent, Sequential for skagents/v1' })
  kind?: string;

  @ValidateIf((o: AgentFileConfig) => o.apiVersion === 'skagents/v1')
  @IsIn(BASE_INPUT_TYPES, {
    message: `input_type must be one of ${BASE_INPUT_TYPES.join(', ')} (custom input types are not supported)`,
  })
  input_type?: BaseInputType;

  /** Upstream's custom structured-output type (a Python class): out of scope, so refused at boot. */
  @IsEmpty({ message: 'output_type (a custom Python output type) is not supported' })
  output_type?: string;

  @ValidateNested() @Type(() => SpecConfig) spec!: SpecConfig;

  [extra: string]: unknown;
}
