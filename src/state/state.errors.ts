import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import type { IdempotencyEntry } from './state.entities';

/** A compare-and-set lost: the task changed since it was read. Nothing was written. */
export class VersionConflictError extends DomainError {
  constructor(
    readonly taskId: string,
    readonly expectedVersion: number,
    readonly actualVersion?: number,
  ) {
    super(
      ErrorCode.VERSION_CONFLICT,
      expectedVersion === 0
        ? `Task ${taskId} already exists`
        : `Task ${taskId} was modified concurrently (expected version ${expectedVersion}${actualVersion === undefined ? '' : `, found ${actualVersion}`})`,
    );
  }
}

/**
 * A commit claimed an Idempotency-Key (TaskWrite.idempotency) that a live entry holds: nothing
 * was written. `entry` is the stored one (what the first POST with the key did). Never a client's
 * answer: the idempotency service turns it into the first POST's outcome, or 422.
 */
export class IdempotencyKeyTakenError extends DomainError {
  constructor(readonly entry: IdempotencyEntry) {
    super(ErrorCode.VERSION_CONFLICT, 'The Idempotency-Key is held by an earlier request');
  }
}

export class StateStoreUnavailableError extends DomainError {
  /**
   * @param unsent true when the store was never reached (no connection), so a write certainly did
   *   not apply; otherwise a write's answer may have been lost after the store applied it.
   */
  constructor(
    message: string,
    cause?: unknown,
    readonly unsent = false,
  ) {
    super(ErrorCode.STATE_STORE_UNAVAILABLE, message, { cause, retryAfter: 1 });
  }
}

/** Stored data that cannot be parsed. The record is left as it is, for inspection. */
export class StateCorruptError extends DomainError {
  constructor(
    readonly key: string,
    cause?: unknown,
  ) {
    super(ErrorCode.STATE_CORRUPT, `Stored state cannot be read (${key})`, { cause });
  }
}
