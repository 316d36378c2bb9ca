import { DynamicModule, Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { AgentDefinition } from './agents/config/agent-definition';
import { AGENTS, ARCHIVE, ENV_CONFIG, LOGGER, TELEMETRY } from './app.tokens';
import type { ArchivePort } from './archive/archive.port';
import { AuditLog } from './common/logging/audit-log';
import { ShutdownStateService } from './common/shutdown/shutdown-state.service';
import type { EnvConfig } from './config/env.config';
import { AgentRunner } from './invocation/agent-runner';
import { LlmProvider } from './llm/llm-provider';
import { StateStore } from './state/state-store';
import { RateLimiter } from './rate-limit/rate-limiter.service';
import { createRateLimiter } from './rate-limit/rate-limiter.factory';
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
  /** The audit archive (TA_ARCHIVE_URL), ready (migrated); shared by reloaded apps, closed by the first. */
  archive?: ArchivePort;
  /**
   * An app built by a config reload (src/reload): it shares the first app's audit log and
   * shutdown state (one drain for the process), and leaves them, the store and telemetry for the
   * first app to close.
   */
  reloaded?: { audit: AuditLog; shutdown: ShutdownStateService };
  /** Runs first when the app closes: the first app closes the apps that reloads built. */
  beforeClose?: () => Promise<void>;
}

const CORE_CLOSING = Symbol('CORE_CLOSING');
interface CoreClosing {
  ownsShared: boolean;
  beforeClose?: () => Promise<void>;
}

/** Flushes spans, metrics and logs, closes the state store and stops the MCP servers when the app closes. */
class CoreShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(TELEMETRY) private readonly telemetry: Telemetry,
    private readonly store: StateStore,
    @Inject(ARCHIVE) private readonly archive: ArchivePort | null,
    private readonly tools: ToolRegistry,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly audit: AuditLog,
    @Inject(CORE_CLOSING) private readonly closing: CoreClosing,
  ) {}
  async onApplicationShutdown(): Promise<void> {
    await this.closing.beforeClose?.().catch((err: unknown) => this.logger.error({ err }, 'closing the reloaded agents failed'));
    if (!this.closing.ownsShared) return void (await this.tools.close().catch(() => undefined));
    await Promise.allSettled([this.telemetry.shutdown(), this.store.close(), this.archive?.close(), this.tools.close(), this.audit.close()]);
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
    const executor = new ToolExecutor(deps.env.tools, deps.logger, (name, attributes, fn) => deps.telemetry.inSpan(name, attributes, fn), deps.telemetry);
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
      { provide: ARCHIVE, useValue: deps.archive ?? null },
      { provide: RateLimiter, useValue: createRateLimiter(deps.store, deps.agents, deps.env.rateLimits, deps.telemetry, deps.logger) },
      { provide: AuditLog, useValue: deps.reloaded?.audit ?? new AuditLog(deps.logger, deps.env.telemetry.auditLogPath) },
      { provide: CORE_CLOSING, useValue: { ownsShared: !deps.reloaded, beforeClose: deps.beforeClose } satisfies CoreClosing },
      CoreShutdown,
      { provide: ShutdownStateService, useValue: deps.reloaded?.shutdown ?? new ShutdownStateService() },
    ];
    return {
      module: CoreModule,
      providers,
      exports: [
        ENV_CONFIG,
        AGENTS,
        LOGGER,
        TELEMETRY,
        ARCHIVE,
        LlmProvider,
        AgentRunner,
        StateStore,
        AuditLog,
        ToolRegistry,
        ShutdownStateService,
        RateLimiter,
      ],
    };
  }
}
