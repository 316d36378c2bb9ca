import type { DataType, OutputType } from '../custom-types/data-type';
import { AgentSpecConfig, SequentialTaskConfig } from './agent.schema';
import { AgentFileConfig, ApiVersion, BaseInputType } from './agent-file.schema';
import { ConcurrencyConfig, GovernanceConfig } from './governance.schema';
import { LimitsConfig } from './limits.schema';
import type { WebhookTarget } from './webhooks.schema';

/** Which versioned API module serves an agent. */
export type ApiModuleKind = 'v1' | 'v2' | 'v3';

/** A validated agent, ready to serve: what the rest of the code reads instead of raw YAML. */
export interface AgentDefinition {
  apiVersion: ApiVersion;
  module: ApiModuleKind;
  name: string;
  version: string;
  /** `/{name}/{version}` */
  prefix: string;
  /** `"{name}:{version}"`, the `source` field of responses. */
  source: string;
  /** metadata.description, else description, else "{name} API". */
  description: string;
  kind: 'Chat' | 'Agent' | 'Sequential';
  /** v1 body type (a Base* type, or the name of `inputSchema`); v2 and v3 are fixed (BaseMultiModalInput / UserMessage). */
  inputType: BaseInputType | (string & {});
  /** A custom v1 `input_type` (custom_types.py/.ts beside the file): it validates the body. */
  inputSchema?: DataType;
  /** `output_type` (v1, v2alpha1): the model answers in this shape; the parsed answer is `output_pydantic`. */
  outputSchema?: OutputType;
  /** The single agent of Chat/Agent/v2/v3 configs; the first agent of a Sequential one. */
  agent: AgentSpecConfig;
  /** Sequential only: agents by name and tasks in `task_no` order. */
  sequential?: { agents: Map<string, AgentSpecConfig>; tasks: SequentialTaskConfig[] };
  /** `spec.governance`, or its defaults when the config has none (then `governed` is false). */
  governance: GovernanceConfig;
  /** The config has `spec.governance`: our approval policy applies; otherwise upstream's (src/tools/governance.ts). */
  governed: boolean;
  concurrency: ConcurrencyConfig;
  /** `spec.limits` (empty when the config has none: the TA_RATE_LIMIT_* defaults apply). */
  limits?: LimitsConfig;
  /** `spec.webhooks` with their secrets read from the environment (empty when the config has none; docs/webhooks.md). */
  webhooks: WebhookTarget[];
  /** The file it came from (absolute), for messages and for finding plugins beside it. */
  file: string;
  config: AgentFileConfig;
}

export function moduleFor(apiVersion: ApiVersion): ApiModuleKind {
  switch (apiVersion) {
    case 'skagents/v1':
      return 'v1';
    case 'skagents/v2alpha1':
      return 'v2';
    case 'tealagents/v1alpha1':
      return 'v3';
  }
}
