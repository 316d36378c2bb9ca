// The schemas' @Type decorators read design-time metadata: load the polyfill wherever they are used.
import 'reflect-metadata';
import { registerDecorator, ValidateIf, ValidationArguments } from '../../common/validation/class-validator-parts';

/**
 * Validators for the agent YAML. Each one checks a field completely (type AND range) and has ONE
 * message, written without the field name: the loader prints `file: field.path: message`, so
 * `spec.agent.temperature: must be a number from 0 to 2 (got the string "0.5")`. class-validator's
 * stock decorators would report a string temperature three times ("not greater than 2", "not less
 * than 0", "not a number"), two of them false.
 */

/** How a wrong value is shown in a message: short, typed, never the whole document. */
export function describeValue(value: unknown): string {
  if (value === null) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Map || typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return `the string ${JSON.stringify(shown)}`;
  }
  return String(value);
}

export interface RuleText {
  /** What a valid value is, as a noun phrase: `must be {expected} (got ...)`. */
  expected: string;
  /** Replaces the message for a present but wrong value (return undefined to keep the default). */
  explain?: (value: unknown) => string | undefined;
  /** Replaces `is required ({expected})` when the key is absent. */
  required?: string;
}

/** A field check with one message; an absent key (`undefined`) reads as "is required". */
export function Rule(name: string, check: (value: unknown, obj: object) => boolean, text: RuleText) {
  return (target: object, propertyName: string | symbol): void =>
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: propertyName as string,
      options: {
        message: ({ value }: ValidationArguments) =>
          value === undefined
            ? (text.required ?? `is required (${text.expected})`)
            : (text.explain?.(value) ?? `must be ${text.expected} (got ${describeValue(value)})`),
      },
      validator: { validate: (value: unknown, args?: ValidationArguments) => check(value, args?.object ?? {}) },
    });
}

/** Absent or `null` (YAML `key:` with no value) means "not set", as pydantic's `Optional` does. */
export const Optional = (): PropertyDecorator => ValidateIf((_o: object, value: unknown) => value !== undefined && value !== null);

/** Absent means "use the default"; `null` is an error, since a field with a default cannot be unset. */
export const Defaulted = (): PropertyDecorator => ValidateIf((_o: object, value: unknown) => value !== undefined);

const isText = (v: unknown): v is string => typeof v === 'string';
export const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

type Extra = Partial<RuleText>;

export const IsText = (x?: Extra) => Rule('isText', isText, { expected: 'a string', ...x });
export const IsNonEmptyText = (x?: Extra) => Rule('isNonEmptyText', (v) => isText(v) && v.trim().length > 0, { expected: 'a non-empty string', ...x });
export const IsBool = (x?: Extra) => Rule('isBool', (v) => typeof v === 'boolean', { expected: 'true or false', ...x });
/** For a list with a bad item, names the item: `item 1 must be a non-empty string (got 42)`. */
export function badItem(ok: (item: unknown) => boolean, expected: string) {
  return (v: unknown): string | undefined => {
    if (!Array.isArray(v)) return undefined;
    const i = v.findIndex((item) => !ok(item));
    return i < 0 ? undefined : `item ${i} must be ${expected} (got ${describeValue(v[i])})`;
  };
}

const isNonEmptyText = (i: unknown) => isText(i) && i.length > 0;
export const IsTextList = (x?: Extra) =>
  Rule('isTextList', (v) => Array.isArray(v) && v.every(isNonEmptyText), {
    expected: 'a list of non-empty strings',
    explain: badItem(isNonEmptyText, 'a non-empty string'),
    ...x,
  });
export const IsMapping = (x?: Extra) => Rule('isMapping', isMapping, { expected: 'a mapping', ...x });
export const IsListOfMappings = (x?: Extra) =>
  Rule('isListOfMappings', (v) => Array.isArray(v) && v.every(isMapping), {
    expected: 'a list of mappings',
    explain: badItem(isMapping, 'a mapping'),
    ...x,
  });
export const IsTextMap = (x?: Extra) =>
  Rule('isTextMap', (v) => isMapping(v) && Object.values(v).every(isText), {
    expected: 'a mapping of strings (quote numbers and booleans)',
    ...x,
  });

export const IsOneOf = (values: readonly unknown[], x?: Extra) => Rule('isOneOf', (v) => values.includes(v), { expected: `one of ${values.join(', ')}`, ...x });

export const IsNumberFrom = (min: number, max?: number, x?: Extra) =>
  Rule('isNumberFrom', (v) => typeof v === 'number' && Number.isFinite(v) && v >= min && (max === undefined || v <= max), {
    expected: max === undefined ? `a number >= ${min}` : `a number from ${min} to ${max}`,
    ...x,
  });

export const IsPositiveNumber = (x?: Extra) =>
  Rule('isPositiveNumber', (v) => typeof v === 'number' && Number.isFinite(v) && v > 0, { expected: 'a number > 0', ...x });

export const IsIntFrom = (min: number, max?: number, x?: Extra) =>
  Rule('isIntFrom', (v) => Number.isInteger(v) && (v as number) >= min && (max === undefined || (v as number) <= max), {
    expected: max === undefined ? `an integer >= ${min}` : `an integer from ${min} to ${max}`,
    ...x,
  });

export const HTTP_URL = /^https?:\/\/[^\s/?#]+\S*$/i;
export const IsHttpUrl = (x?: Extra) => Rule('isHttpUrl', (v) => isText(v) && HTTP_URL.test(v), { expected: 'an http:// or https:// URL', ...x });

/**
 * Agent names and versions become a URL path segment (`/{name}/{version}`): only unreserved URL
 * characters, and not `.`/`..`, which a client or proxy would resolve as a relative path.
 */
const PATH_SEGMENT = /^[A-Za-z0-9._~-]+$/;
export const IsPathSegment = (x?: Extra) =>
  Rule('isPathSegment', (v) => isText(v) && PATH_SEGMENT.test(v) && v !== '.' && v !== '..', {
    expected: 'a URL-safe string',
    explain: (v) =>
      isText(v)
        ? `must be URL-safe, because it becomes a URL path segment: only letters, digits and . _ ~ - and not "." or ".." (got ${describeValue(v)})`
        : undefined,
    ...x,
  });
