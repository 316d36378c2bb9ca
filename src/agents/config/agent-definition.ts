import { AgentSpecConfig, SequentialTaskConfig } from './agent.schema';
import { AgentFileConfig, ApiVersion, BaseInputType } from './agent-file.schema';
import { ConcurrencyConfig, GovernanceConfig } from './governance.schema';

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
  /** v1 body type; v2 and v3 are fixed (BaseMultiModalInput / UserMessage). */
  inputType: BaseInputType;
  /** The single agent of Chat/Agent/v2/v3 configs; the first agent of a Sequential one. */
  agent: AgentSpecConfig;
  /** Sequential only: agents by name and tasks in `task_no` order. */
  sequential?: { agents: Map<string, AgentSpecConfig>; tasks: SequentialTaskConfig[] };
  governance: GovernanceConfig;
  concurrency: ConcurrencyConfig;
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
