import type { INestApplication } from '@nestjs/common';
import type { Logger } from 'pino';
import { AgentDefinition } from '../agents/config/agent-definition';
import { ConfigError } from '../agents/config/config-error';
import { AgentGenerations } from './agent-generations';
import { diffAgents } from './diff-agents';

export interface BuiltGeneration {
  app: INestApplication;
  agents: AgentDefinition[];
}

/**
 * Applies the config files again: builds a complete new app from them (every check of the boot,
 * with its `file:line` messages) and swaps it in, or, when anything is wrong, logs why and keeps
 * the last good config serving. One reload at a time; triggers during a reload coalesce into one
 * more reload after it, which reads the files as they are then.
 */
export class ConfigReloader {
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private agents: AgentDefinition[],
    private readonly generations: AgentGenerations,
    private readonly build: () => Promise<BuiltGeneration>,
    private readonly logger: Logger,
  ) {}

  /** Resolves when the reload (and any coalesced one) has been applied or refused. */
  reload(trigger: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.reloadOnce(trigger);
      } while (this.again && !this.stopped);
    })().finally(() => (this.running = undefined));
    return this.running;
  }

  /** The app is closing: no more reloads; resolves once the one under way (if any) is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async reloadOnce(trigger: string): Promise<void> {
    let next: BuiltGeneration;
    try {
      next = await this.build();
    } catch (err) {
      if (err instanceof ConfigError) {
        // The boot's own text (file:line: field: message), so one fix works for both.
        this.logger.error({ trigger, problems: err.problems }, `config reload refused, the last good config keeps serving: ${err.message}`);
      } else {
        this.logger.error({ trigger, err }, 'config reload failed, the last good config keeps serving');
      }
      return;
    }
    const diff = diffAgents(this.agents, next.agents);
    this.generations.swap(next.app);
    this.agents = next.agents;
    const list = (prefixes: string[]) => (prefixes.length ? prefixes.join(' ') : 'none');
    this.logger.info({ trigger, ...diff }, `config reloaded: added ${list(diff.added)}, changed ${list(diff.changed)}, removed ${list(diff.removed)}`);
  }
}
