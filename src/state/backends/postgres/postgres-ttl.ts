import { PostgresContext } from './postgres-context';

/**
 * The expiry sweep: PostgreSQL has no TTL of its own, so expired tasks and Idempotency-Key entries
 * (which read as missing from the moment they expire) are deleted by the store. Every `intervalMs`
 * a replica calls `sweep_expired` (migrations/0003-idempotency-keys.sql.ts, which replaced
 * 0001-init.sql.ts's): at most `batch` rows in one transaction, expired entries first (oldest
 * first), then tasks, requests first and the header last, so a sweep cut short leaves a task that
 * still reads as missing and is finished by the next; and under an advisory lock taken with try, so
 * one replica sweeps at a time while the others skip. A step that removed a whole batch is followed
 * by another at once (up to MAX_STEPS a round), so a backlog drains without holding locks long.
 */
export class ExpirySweep {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly ctx: PostgresContext,
    private readonly options: { intervalMs: number; batch: number },
  ) {}

  start(): void {
    if (this.timer || this.options.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.round(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One step: the rows removed, or -1 when another replica holds the sweep's lock. */
  async step(): Promise<number> {
    const { names } = this.ctx;
    const [{ removed }] = await this.ctx.query<{ removed: number }>(`${names.schema} expiry sweep`, `SELECT ${names.fn('sweep_expired')}($1) AS removed`, [
      this.options.batch,
    ]);
    return removed;
  }

  private round(): Promise<void> {
    this.running ??= (async () => {
      try {
        for (let i = 0; i < MAX_STEPS && this.timer; i++) if ((await this.step()) < this.options.batch) break;
      } catch {
        // Unavailable now: the next round tries again (expired tasks and entries read as missing meanwhile).
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}

const MAX_STEPS = 20;
