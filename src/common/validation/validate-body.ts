import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from './class-validator-parts';
import { flattenValidationErrors } from './flatten-validation-errors';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';

/**
 * Validates a request body against a DTO class and returns the typed instance, or throws a 422
 * DomainError listing every invalid field by path (`chat_history.0.items.1.content`).
 * Unknown top-level keys are ignored, as the upstream (pydantic) models do, so that orchestrators
 * sending extra fields keep working; unknown nested values are rejected.
 */
export function validateBody<T extends object>(cls: ClassConstructor<T>, body: unknown): T {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, 'The request body must be a JSON object', {
      errors: [{ field: '', message: 'the body must be a JSON object' }],
    });
  }
  const instance = plainToInstance(cls, body);
  const errors = flattenValidationErrors(validateSync(instance, { forbidUnknownValues: true }));
  if (errors.length) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, `Invalid request body: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`, { errors });
  }
  return instance;
}
