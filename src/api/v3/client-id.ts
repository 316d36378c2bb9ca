import { Matches } from '../../common/validation/class-validator-parts';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';

/**
 * A `session_id` or `task_id` the caller names. Upstream takes any string (clients send their own
 * ids, not only UUIDs); we take the characters ids are made of, up to 128 of them, so an id is
 * safe in a URL path, a log line and every store key (the stores percent-encode it anyway).
 */
export const CLIENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const rule = (name: string) => `${name} must be 1 to 128 characters: letters, digits, "-", "_", "." or ":"`;

/** The body field form of the rule (a 422 naming the field). */
export function IsClientId(name: 'session_id' | 'task_id'): PropertyDecorator {
  return Matches(CLIENT_ID, { message: rule(name) });
}

/** The path parameter form: a 422 naming the parameter. Ids are case-sensitive, as upstream's. */
export function parseClientIdParam(name: 'session_id' | 'task_id', value: string): string {
  if (!CLIENT_ID.test(value)) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, rule(name), { errors: [{ field: name, message: rule(name) }] });
  }
  return value;
}
