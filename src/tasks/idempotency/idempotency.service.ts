import { Injectable } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { IdempotencyEntry } from '../../state/state.entities';
import { IdempotencyKeyTakenError } from '../../state/state.errors';
import { TaskReaderService } from '../writer/task-reader.service';
import { checkFingerprint, IdempotencyClaim } from './idempotency-claim';

/** Errors of a first attempt that are no answer about the request itself: never re-checked against the key. */
const NOT_A_RACE = new Set<ErrorCode>([ErrorCode.VALIDATION_FAILED, ErrorCode.STATE_STORE_UNAVAILABLE, ErrorCode.PAYLOAD_TOO_LARGE]);

/**
 * `Idempotency-Key` (docs/api.md, "Retries with Idempotency-Key"): a POST carrying one runs at most
 * once per tenant, owner and agent, however often it is sent and to whichever replica.
 *
 * The key is claimed in the same commit as the write it guards (TaskWrite.idempotency), so two
 * copies racing cannot both write: the store lets exactly one claim through. A copy that arrives
 * after it finds the stored entry first and answers from it (`replay`); one that raced it loses
 * either on the key (IdempotencyKeyTakenError) or on the task it would have written (busy,
 * already decided, a lost compare-and-set: the winner's write, which holds the key, is what it
 * lost to), and then finds the entry too. The same key with another route or body is 422.
 */
@Injectable()
export class IdempotencyService {
  constructor(private readonly reader: TaskReaderService) {}

  /**
   * `first()` unless the claim's key is held already, in which case `replay` of what holds it;
   * without a claim, simply `first()`. A read of the entry before the attempt costs one store
   * round trip, paid only by requests that carry the header.
   */
  async once<T>(claim: IdempotencyClaim | undefined, first: () => Promise<T>, replay: (entry: IdempotencyEntry) => Promise<T>): Promise<T> {
    if (!claim) return first();
    const held = await this.find(claim);
    if (held) return replay(held);
    try {
      return await first();
    } catch (err) {
      const entry = await this.heldAfter(claim, err);
      if (!entry) throw err;
      checkFingerprint(claim, entry);
      return replay(entry);
    }
  }

  /** The live entry under the claim's key, checked against its fingerprint (422 for another request). */
  async find(claim: IdempotencyClaim): Promise<IdempotencyEntry | undefined> {
    const entry = await this.reader.idempotencyEntry(claim.tenantId, claim.key);
    if (entry) checkFingerprint(claim, entry);
    return entry;
  }

  /** After a failed first attempt: the entry a twin stored, when the failure may be that twin's doing. */
  private async heldAfter(claim: IdempotencyClaim, err: unknown): Promise<IdempotencyEntry | undefined> {
    if (err instanceof IdempotencyKeyTakenError) return err.entry;
    if (!(err instanceof DomainError) || NOT_A_RACE.has(err.code)) return undefined;
    return this.reader.idempotencyEntry(claim.tenantId, claim.key).catch(() => undefined);
  }
}
