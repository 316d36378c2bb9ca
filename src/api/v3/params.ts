import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A server-minted id (`request_id`) that is not a UUID is a 422 naming the parameter (task and session ids: client-id.ts). */
export function parseUuidParam(name: string, value: string): string {
  if (!UUID.test(value)) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, `${name} must be a UUID`, {
      errors: [{ field: name, message: `${name} must be a UUID` }],
    });
  }
  return value.toLowerCase();
}

export function parsePageSize(value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, `limit must be an integer from 1 to ${max}`, {
      errors: [{ field: 'limit', message: `limit must be an integer from 1 to ${max}` }],
    });
  }
  return n;
}
