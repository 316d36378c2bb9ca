import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { RequestRecord } from '../../state/state.entities';

/**
 * Refuses (413) a new request whose record is larger than the store admits
 * (StateStore.maxRequestBytes), before anything is written or the model is called: past this
 * point the store takes the record, and the answer added to it, whatever their size.
 */
export function assertStorable(max: number | undefined, request: RequestRecord): RequestRecord {
  if (max === undefined) return request;
  const bytes = Buffer.byteLength(JSON.stringify(request));
  if (bytes > max) throw new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, `The message takes ${bytes} bytes to store; the state store takes at most ${max}`);
  return request;
}
