import { Inject, Injectable } from '@nestjs/common';
import { READINESS_CHECKS, ReadinessCheck } from './readiness';

const CHECK_TIMEOUT_MS = 2000;

export interface ReadinessReport {
  ready: boolean;
  timestamp: string;
  checks: Record<string, { status: 'up' | 'down'; error?: string }>;
}

@Injectable()
export class HealthService {
  private readonly startedAt = Date.now();

  constructor(@Inject(READINESS_CHECKS) private readonly checks: ReadinessCheck[]) {}

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

  /** Every dependency checked in parallel, each bounded in time so a hung store cannot hang the probe. */
  async ready(): Promise<ReadinessReport> {
    const results = await Promise.all(
      this.checks.map(async (c) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            c.check(),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
            }),
          ]);
          return [c.name, { status: 'up' as const }] as const;
        } catch (e) {
          return [c.name, { status: 'down' as const, error: (e as Error).message }] as const;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return {
      ready: results.every(([, r]) => r.status === 'up'),
      timestamp: new Date().toISOString(),
      checks: Object.fromEntries(results),
    };
  }
}
