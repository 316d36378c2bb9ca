import { Inject, Injectable } from '@nestjs/common';
import { ENV_CONFIG } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';

/** Seconds a refused client is told to wait (`Retry-After`): a stream usually ends within a turn. */
const RETRY_AFTER_SECONDS = 2;

/**
 * Admission of the reconnected v3 streams that follow the store (a request running on another
 * replica: src/tasks/reattach/stored-stream-follower.service.ts, or the RequestWatcherService): each one keeps a poller of
 * the store alive, so they are counted while they are open, per caller (tenant and owner) and per
 * replica (TA_STREAM_REPLAY_MAX_PER_CALLER, TA_STREAM_REPLAY_MAX_PER_REPLICA). Past either, 429
 * TOO_MANY_STREAMS with Retry-After, answered before the stream opens. A replay served from a run
 * on this replica costs no store call and is not counted.
 */
@Injectable()
export class ReplayAdmissionService {
  private readonly perCaller = new Map<string, number>();
  private total = 0;
  private readonly maxPerCaller: number;
  private readonly maxPerReplica: number;

  constructor(@Inject(ENV_CONFIG) env: EnvConfig) {
    ({ maxPerCaller: this.maxPerCaller, maxPerReplica: this.maxPerReplica } = env.http.streamReplay);
  }

  /** Counts one more replay of `principal`; the returned function ends it (calling it again does nothing). */
  admit(principal: Principal): () => void {
    const key = `${principal.tenantId}\u0000${principal.ownerId}`;
    const mine = this.perCaller.get(key) ?? 0;
    if (mine >= this.maxPerCaller || this.total >= this.maxPerReplica) {
      const limit = mine >= this.maxPerCaller ? `${this.maxPerCaller} per caller` : `${this.maxPerReplica} on this replica`;
      throw new DomainError(ErrorCode.TOO_MANY_STREAMS, `Too many reconnected streams at once (at most ${limit}); retry later`, {
        retryAfter: RETRY_AFTER_SECONDS,
      });
    }
    this.perCaller.set(key, mine + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perCaller.get(key) ?? 1) - 1;
      if (left > 0) this.perCaller.set(key, left);
      else this.perCaller.delete(key);
    };
  }
}
