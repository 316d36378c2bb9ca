import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { ShutdownStateService } from '../common/shutdown/shutdown-state.service';
import { AgentGenerations } from './agent-generations';
import { BuiltGeneration, ConfigReloader } from './config-reloader';
import { watchConfig } from './config-watcher';

export interface AgentReloadOptions {
  configPath: string;
  agents: AgentDefinition[];
  /** TA_CONFIG_WATCH */
  watch: boolean;
  logger: Logger;
  /** Builds and init()s the app of the config as it is now on disk; throws ConfigError when it is invalid. */
  build: () => Promise<BuiltGeneration>;
}

/**
 * Hot reload of the agent configs (docs/configuration.md, "Reloading agents"): SIGHUP, and with
 * TA_CONFIG_WATCH a change of the config files, rebuild the agents without a restart.
 */
export class AgentReload {
  private readonly generations: AgentGenerations;
  readonly reloader: ConfigReloader;
  private stopWatching?: () => void;
  private readonly shutdown: ShutdownStateService;

  constructor(
    boot: INestApplication,
    private readonly options: AgentReloadOptions,
  ) {
    this.shutdown = boot.get(ShutdownStateService);
    this.generations = new AgentGenerations(boot, options.logger);
    this.reloader = new ConfigReloader(options.agents, this.generations, options.build, options.logger);
  }

  /** Must be the booted app's first middleware. */
  readonly dispatch = (req: Request, res: Response, next: NextFunction): void => this.generations.dispatch(req, res, next);

  /** Once the server listens: follow SIGHUP, and the files when TA_CONFIG_WATCH is on. */
  start(server: Server): void {
    this.generations.attach(server);
    process.on('SIGHUP', this.onSighup);
    if (this.options.watch) {
      this.stopWatching = watchConfig(this.options.configPath, () => this.trigger('file change'), this.options.logger).close;
    }
  }

  /** When the booted app closes. */
  async close(): Promise<void> {
    process.off('SIGHUP', this.onSighup);
    this.stopWatching?.();
    // A reload under way would swap in an app after the others closed.
    await this.reloader.stop();
    await this.generations.closeAll();
  }

  private readonly onSighup = (): void => this.trigger('SIGHUP');

  /** A draining process (SIGTERM) builds nothing new. */
  private trigger(name: string): void {
    if (!this.shutdown.draining) void this.reloader.reload(name);
  }
}
