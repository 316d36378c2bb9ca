import { DynamicModule, Module } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { EnvConfig } from '../../config/env.config';
import { InvocationModule } from '../../invocation/invocation.module';
import { TasksModule } from '../../tasks/tasks.module';
import { ModelCatalog } from './model-catalog.util';
import { createOpenAiController } from './openai.controller';
import { ChatCompletionsService } from './chat-completions.service';

/**
 * The OpenAI-compatible endpoint (docs/openai.md): POST /openai/v1/chat/completions, GET /openai/v1/models.
 * Registered only when TA_FRONT_DOORS names it. Every agent is a model; stateless ones run through
 * InvocationModule, stateful ones through the same TasksModule instance as the v3 and AG-UI routes.
 */
@Module({})
export class OpenAiCompatModule {
  static register(agents: AgentDefinition[], _env: EnvConfig): DynamicModule {
    return {
      module: OpenAiCompatModule,
      imports: [InvocationModule, TasksModule],
      providers: [ChatCompletionsService],
      controllers: [createOpenAiController(new ModelCatalog(agents))],
    };
  }
}
