import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';

/** The OpenAI-compatible endpoint (docs/openai.md): POST /openai/v1/chat/completions, GET /openai/v1/models. Registered only when TA_FRONT_DOORS names it. */
@Module({})
export class OpenAiCompatModule {
  static register(_agents: AgentDefinition[], _env: EnvConfig): DynamicModule {
    return { module: OpenAiCompatModule };
  }
}
