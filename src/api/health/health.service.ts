import { Inject, Injectable, Optional } from '@nestjs/common';
import { ShutdownStateService } from '../../common/shutdown/shutdown-state.service';
import { READINESS_CHECKS, ReadinessCheck } from './readiness';

const CHECK_TIMEOUT_MS = 2000;

/** An agent's readiness (`GET /{name}/{version}/health/ready`): its checks by name. */
export interface ReadinessReport {
  ready: boolean;
  timestamp: string;
  checks: Record<string, { status: 'up' | 'down'; error?: string }>;
}

/** One dependency in the process's readiness (`GET /health/ready`). */
export interface DependencyState {
  name: string;
  state: 'up' | 'down';
  /** Why it is down. */
  detail?: string;
  /** The agent it serves alone (a required MCP server). */
  agent?: string;
}

/** The process's readiness: every dependency of every agent. */
export interface ProcessReadinessReport {
  ready: boolean;
  timestamp: string;
  dependencies: DependencyState[];
}

@Injectable()
export class HealthService {
  private readonly startedAt = Date.now();

  constructor(
    @Inject(READINESS_CHECKS) private readonly checks: ReadinessCheck[],
    @Optional() private readonly shutdown?: ShutdownStateService,
  ) {}

  /** Upstream's `HealthStatus` shape. */
  health(version: string) {
    return {
      status: 'healthy',
      timestamp: new Date().toISOString(),
      version,
      uptime: (Date.now() - this.startedAt) / 1000,
      dependencies: null,
    };
  }

  /** Upstream's `LivenessStatus`: the process answers. */
  live() {
    return { alive: true, timestamp: new Date().toISOString() };
  }

  /** An agent's readiness: the shared dependencies and its own (`agent` is its `name:version`). */
  async ready(agent?: string): Promise<ReadinessReport> {
    const states = this.withDraining(await this.dependencies(this.checks.filter((c) => c.agent === undefined || c.agent === agent)));
    return {
      ready: states.every((d) => d.state === 'up'),
      timestamp: new Date().toISOString(),
      checks: Object.fromEntries(states.map((d) => [d.name, d.state === 'up' ? { status: 'up' as const } : { status: 'down' as const, error: d.detail }])),
    };
  }

  /** The process's readiness: every dependency of every agent. */
  async processReady(): Promise<ProcessReadinessReport> {
    const dependencies = this.withDraining(await this.dependencies(this.checks));
    return { ready: dependencies.every((d) => d.state === 'up'), timestamp: new Date().toISOString(), dependencies };
  }

  /** A draining replica is not ready, whatever its dependencies say: load balancers stop sending to it. */
  private withDraining(states: DependencyState[]): DependencyState[] {
    if (!this.shutdown?.draining) return states;
    return [{ name: 'shutdown', state: 'down', detail: 'draining: the server is shutting down' }, ...states];
  }

  /** Every check in parallel, each bounded in time so a hung dependency cannot hang the probe. */
  private dependencies(checks: ReadinessCheck[]): Promise<DependencyState[]> {
    return Promise.all(
      checks.map(async (c): Promise<DependencyState> => {
        const of = c.agent === undefined ? {} : { agent: c.agent };
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            c.check(),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
            }),
          ]);
          return { name: c.name, state: 'up', ...of };
        } catch (e) {
          return { name: c.name, state: 'down', detail: (e as Error).message, ...of };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }
}
