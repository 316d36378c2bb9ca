import { registerDecorator, ValidationArguments } from '../common/validation/class-validator-parts';

/**
 * Environment validators with one message each, naming the variable and (unless `secret`) the
 * value it had: `TA_PORT must be an integer from 0 to 65535 (got "abc")`. Stock class-validator
 * decorators would report `TA_PORT=abc` three times ("not greater than 65535", "not less than 0",
 * "not an integer"), two of them false.
 */
export function EnvRule(check: (value: unknown) => boolean, expected: string, options: { secret?: boolean } = {}) {
  return (target: object, propertyName: string | symbol): void =>
    registerDecorator({
      name: 'envRule',
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: ({ property, value }: ValidationArguments) => `${property} must be ${expected}${options.secret ? '' : ` (got ${JSON.stringify(value)})`}`,
      },
      validator: { validate: (value: unknown) => check(value) },
    });
}

/** Integers arrive as strings; a value that is not one stays a string and fails the check. */
export const EnvInt = (min: number, max?: number) =>
  EnvRule(
    (v) => Number.isInteger(v) && (v as number) >= min && (max === undefined || (v as number) <= max),
    max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`,
  );

export const EnvOneOf = (values: readonly unknown[], expected = `one of ${values.join(', ')}`) => EnvRule((v) => values.includes(v), expected);

export const EnvUrl = (schemes: readonly string[] = ['http', 'https']) =>
  EnvRule(
    (v) => typeof v === 'string' && new RegExp(`^(${schemes.join('|')})://[^\\s/?#]+\\S*$`, 'i').test(v),
    `${schemes[0]!.startsWith('h') ? 'an' : 'a'} ${schemes.map((s) => `${s}://`).join(' or ')} URL`,
  );

export const EnvBool = () => EnvRule((v) => typeof v === 'boolean', 'true or false (also 1/0, yes/no, on/off)');

export const EnvList = () => EnvRule((v) => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string'), 'a comma- or space-separated list');

// Transforms: environment values are strings; these turn the valid ones into their real type.
export const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value);
export const toBool = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? (/^(1|true|yes|on)$/i.test(value.trim()) ? true : /^(0|false|no|off)$/i.test(value.trim()) ? false : value) : value;
export const toList = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.split(/[\s,]+/).filter(Boolean) : value);
