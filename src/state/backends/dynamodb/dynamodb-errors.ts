import { DomainError } from '../../../common/errors/domain-error';
import { StateStoreUnavailableError } from '../../state.errors';

/** Service errors that mean "DynamoDB cannot serve now" rather than "our request is wrong". */
const TRANSIENT = new Set([
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'ThrottlingException',
  'InternalServerError',
  'ServiceUnavailable',
  'LimitExceededException',
  'TimeoutError',
  'CredentialsProviderError',
]);

/**
 * Maps what the AWS SDK throws to the contract's errors. Anything without an HTTP response
 * (refused connection, timeout, DNS) and every server-side or throttling error is "unavailable";
 * a missing table too (a deployment problem, reported as 503 by readiness). Other client errors
 * (validation, an item over 400 KB) and our own bugs stay as they are.
 */
export function toStateError(err: unknown, table: string): unknown {
  if (err instanceof DomainError) return err;
  const e = err as { name?: string; code?: string; message?: string; $fault?: string; $metadata?: { httpStatusCode?: number } };
  const message = e?.message ?? String(err);
  if (e?.name === 'ResourceNotFoundException') {
    return new StateStoreUnavailableError(`DynamoDB table ${table} does not exist`, err);
  }
  // No HTTP status: the request never got an answer (refused, reset, timed out, DNS).
  const unanswered = e?.$metadata !== undefined ? e.$metadata.httpStatusCode === undefined : /^E[A-Z]+$/.test(e?.code ?? '');
  if (unanswered || e?.$fault === 'server' || TRANSIENT.has(e?.name ?? '')) {
    // A refused connection never reached DynamoDB: a write certainly did not apply.
    const unsent = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN/.test(`${e?.code ?? ''} ${message}`);
    return new StateStoreUnavailableError(`DynamoDB is unavailable: ${message}`, err, unsent);
  }
  return err;
}
