import { plainToInstance, Transform } from 'class-transformer';
import { registerDecorator, ValidateNested, ValidationOptions } from '../../common/validation/class-validator-parts';
import { describeValue, isMapping } from './field-validators';

/** A plain object whose values are all strings (env maps, headers, user_context). */
export function IsStringRecord(options?: ValidationOptions): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isStringRecord',
      target: target.constructor,
      propertyName: propertyName as string,
      options: { message: `${String(propertyName)} must be a map of strings`, ...options },
      validator: {
        validate: (value: unknown) =>
          typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string'),
      },
    });
}

/**
 * A YAML map of nested config objects (`{toolName: {...}}`) read into a `Map<string, Cls>` so that
 * class-validator validates each value (it only walks arrays, Sets and Maps) and reports paths like
 * `tools.my-tool.risk`.
 */
export function RecordOf<T>(cls: new () => T): PropertyDecorator {
  return (target, propertyName) => {
    Transform(({ value }) => {
      if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
      return new Map(Object.entries(value).map(([k, v]) => [k, plainToInstance(cls, v)]));
    })(target, propertyName as string);
    ValidateNested({ each: true })(target, propertyName as string);
    registerDecorator({
      name: 'isRecordOf',
      target: target.constructor,
      propertyName: propertyName as string,
      // Worded like field-validators.ts: the loader prints `field.path: message`.
      options: {
        message: ({ value }) => {
          const bad = value instanceof Map ? [...value].find(([, v]) => !isMapping(v)) : undefined;
          return bad
            ? `the value of "${String(bad[0])}" must be a mapping of settings (got ${describeValue(bad[1])})`
            : `must be a mapping of names to settings (got ${describeValue(value)})`;
        },
      },
      validator: {
        validate: (value: unknown) => value === undefined || (value instanceof Map && [...value.values()].every(isMapping)),
      },
    });
  };
}
