import { ValidationError } from './class-validator-parts';
import { FieldError } from '../errors/domain-error';

/** class-validator's error tree as a flat list of `{field: "a.b.0.c", message}`. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const field = parent ? `${parent}.${e.property}` : e.property;
    for (const [constraint, message] of Object.entries(e.constraints ?? {})) {
      out.push({
        field,
        message:
          constraint === 'whitelistValidation' ? `unknown field "${e.property}"` : constraint === 'unknownValue' ? `${field} must be an object` : message,
      });
    }
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, field));
  }
  return out;
}
