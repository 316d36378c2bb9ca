import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy, Optional } from '@nestjs/common';
import type { Logger } from 'pino';
import { ARCHIVE, ENV_CONFIG, LOGGER } from '../../app.tokens';
import type { ArchivePort } from '../../archive/archive.port';
import type { EnvConfig } from '../../config/env.config';

/** Rows one retention step removes at most (one statement). */
export const RETENTION_BATCH = 1000;
/** Steps one pass runs at most (100,000 rows); a pass that leaves more is followed by the next after BACKLOG_PAUSE_MS. */
export const RETENTION_STEPS = 100;
const BACKLOG_PAUSE_MS = 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The archive's retention (issue 23, item 5; docs/archive.md, Retention): every
 * TA_ARCHIVE_RETENTION_SWEEP_MS (default an hour, jittered to 75–100 % so replicas spread out)
 * each replica removes the archive's rows older than TA_ARCHIVE_RETENTION_DAYS, in steps of
 * RETENTION_BATCH rows (ArchivePort.purgeOlderThan: rows another replica is purging are skipped,
 * not waited for) until a step removes fewer, at most RETENTION_STEPS steps a pass. A failure ends
 * the pass (logged, never thrown); the timer never keeps the process alive and stops with the app.
 */
@Injectable()
export class ArchiveRetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly intervalMs: number;
  private readonly retentionMs: number;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(ARCHIVE) private readonly archive?: ArchivePort | null,
  ) {
    this.intervalMs = env.archive?.retentionSweepMs ?? 0;
    this.retentionMs = (env.archive?.retentionDays ?? 0) * DAY_MS;
  }

  onApplicationBootstrap(): void {
    if (this.archive && this.intervalMs > 0 && this.retentionMs > 0) this.schedule(this.jittered());
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * One pass (exposed for tests): rows older than `now` minus the retention, step by step until a
   * step removes fewer than a batch, at most `steps` steps. `more` when the bound ended it.
   */
  async purge(now = Date.now(), batch = RETENTION_BATCH, steps = RETENTION_STEPS): Promise<{ removed: number; more: boolean }> {
    if (!this.archive) return { removed: 0, more: false };
    const cutoff = new Date(now - this.retentionMs);
    let removed = 0;
    for (let step = 0; step < steps && !this.stopped; step++) {
      const n = await this.archive.purgeOlderThan(cutoff, batch);
      removed += n;
      if (n < batch) return { removed, more: false };
    }
    return { removed, more: true };
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pass(), delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    let more = false;
    try {
      const result = await this.purge();
      more = result.more;
      if (result.removed) this.logger.info({ removed: result.removed, more }, 'archive retention: old rows purged');
    } catch (err) {
      if (!this.stopped) this.logger.warn({ err }, 'archive retention failed; trying again on the next pass');
    }
    this.schedule(more ? BACKLOG_PAUSE_MS : this.jittered());
  }

  private jittered(): number {
    return Math.round(this.intervalMs * (0.75 + Math.random() * 0.25));
  }
}
