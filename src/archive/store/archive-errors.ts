import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { toStateError } from '../../state/backends/postgres/postgres-errors';
import { StateStoreUnavailableError } from '../../state/state.errors';

/**
 * The archive's PostgreSQL cannot serve now: refused or reset connections, a wait for a pooled
 * connection or an answer that timed out, the transient SQLSTATEs, or a schema not migrated (the
 * same judgement as the state store's, postgres-errors.ts). `unsent`: the statement was never sent,
 * so a write certainly did not apply; otherwise it may have (every archive write is idempotent, so
 * the caller retries it as it is). A 503 (ARCHIVE_UNAVAILABLE).
 */
export class ArchiveUnavailableError extends DomainError {
  constructor(
    message: string,
    cause?: unknown,
    readonly unsent = false,
  ) {
    super(ErrorCode.ARCHIVE_UNAVAILABLE, message, { cause, retryAfter: 1 });
  }
}

/** A paging cursor this archive did not issue, or one of the other read (a timeline's cursor on listEvents). */
export class ArchiveCursorError extends DomainError {
  constructor() {
    super(ErrorCode.INVALID_CURSOR, 'The cursor is not one this archive issued');
  }
}

/** What node-postgres threw, as ArchiveUnavailableError when PostgreSQL cannot serve now; anything else (our bugs) as it is. */
export function toArchiveError(err: unknown, what: string, unsent: boolean): unknown {
  const mapped = toStateError(err, what, unsent);
  if (!(mapped instanceof StateStoreUnavailableError)) return mapped;
  const message = mapped.message.replace(/^PostgreSQL state schema/, 'The archive schema').replace(/^PostgreSQL is/, 'The archive (PostgreSQL) is');
  return new ArchiveUnavailableError(message, err, mapped.unsent);
}
