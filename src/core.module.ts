import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { AgentDefinition } from './agents/config/agent-definition';
import { AGENTS, ENV_CONFIG, LOGGER, TELEMETRY } from './app.tokens';
import type { EnvConfig } from './config/env.config';
import { AgentRunner } from './invocation/agent-runner';
import { LlmProvider } from './llm/llm-provider';
import { StateStore } from './state/state-store';
import { Telemetry } from './telemetry/telemetry';
import { ToolExecutor } from './tools/tool-executor';
import { ToolRegistry } from './tools/tool-registry';

export interface CoreDependencies {
  env: EnvConfig;
  agents: AgentDefinition[];
  logger: Logger;
  telemetry: Telemetry;
  llm: LlmProvider;
  store: StateStore;
}

/** Flushes spans, metrics and logs, closes the state store and stops the MCP servers when the app closes. */
class CoreShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    private readonly store: StateStore,
    private readonly tools: ToolRegistry,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}
  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.telemetry.shutdown(), this.store.close(), this.tools.close()]);
    // Log lines are written asynchronously: write out what is pending before the process ends.
    await new Promise<void>((resolve) => this.logger.flush(() => resolve()));
  }
}

/** The values built before Nest starts (validated config, agents, logger, telemetry, model provider). */
@Global()
@Module({})
export class CoreModule {
  static forRoot(deps: CoreDependencies): DynamicModule {
    // Built before Nest starts: a missing plugin or a broken OpenAPI document stops the boot with
    // the file and the field (ConfigError), like any other config problem. MCP servers connect later.
    const tools = ToolRegistry.build(deps.agents, deps.env.tools, deps.logger);
    const executor = new ToolExecutor(deps.env.tools, deps.logger, (name, attributes, fn) => deps.telemetry.inSpan(name, attributes, fn));
    const providers = [
      { provide: ENV_CONFIG, useValue: deps.env },
      { provide: AGENTS, useValue: deps.agents },
      { provide: LOGGER, useValue: deps.logger },
      { provide: TELEMETRY, useValue: deps.telemetry },
      { provide: LlmProvider, useValue: deps.llm },
      { provide: ToolRegistry, useValue: tools },
      { provide: ToolExecutor, useValue: executor },
      { provide: AgentRunner, useFactory: (llm: LlmProvider) => new AgentRunner(llm, tools, executor), inject: [LlmProvider] },
      { provide: StateStore, useValue: deps.store },
      CoreShutdown,
    ];
    return {
      module: CoreModule,
      providers,
      exports: [ENV_CONFIG, AGENTS, LOGGER, TELEMETRY, LlmProvider, AgentRunner, StateStore],
    };
  }
}
