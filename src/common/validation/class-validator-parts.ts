import type * as ClassValidator from 'class-validator';

/**
 * The parts of class-validator the app uses, each loaded from its own file. The package's index
 * loads every decorator it has, and with them validator.js whole and libphonenumber-js: ~320
 * modules, a quarter of what a server loads at boot (issue 14), for ~30 that the app needs. Import
 * from here, not from 'class-validator' (specs may: they do not boot a server). The files are
 * those of the exact version package.json pins; class-validator-parts.spec.ts checks that each part
 * is the index's own.
 */
type Index = typeof ClassValidator;

function part<K extends keyof Index>(file: string, name: K): Index[K] {
  return (require(`class-validator/cjs/${file}`) as Index)[name];
}

export type { ValidationArguments, ValidationError, ValidationOptions, ValidatorOptions } from 'class-validator';

export const registerDecorator = part('register-decorator', 'registerDecorator');
export const getMetadataStorage = part('metadata/MetadataStorage', 'getMetadataStorage');
export const IsOptional = part('decorator/common/IsOptional', 'IsOptional');
export const IsIn = part('decorator/common/IsIn', 'IsIn');
export const ValidateIf = part('decorator/common/ValidateIf', 'ValidateIf');
export const ValidateNested = part('decorator/common/ValidateNested', 'ValidateNested');
export const IsArray = part('decorator/typechecker/IsArray', 'IsArray');
export const IsBoolean = part('decorator/typechecker/IsBoolean', 'IsBoolean');
export const IsString = part('decorator/typechecker/IsString', 'IsString');
export const ArrayMinSize = part('decorator/array/ArrayMinSize', 'ArrayMinSize');
export const IsUUID = part('decorator/string/IsUUID', 'IsUUID');
export const Matches = part('decorator/string/Matches', 'Matches');
export const MaxLength = part('decorator/string/MaxLength', 'MaxLength');

const Validator = part('validation/Validator', 'Validator');
const getFromContainer = part('container', 'getFromContainer');

/** The index's `validateSync(object, options)`: the same Validator, from the same container. */
export function validateSync(object: object, options?: ClassValidator.ValidatorOptions): ClassValidator.ValidationError[] {
  return getFromContainer(Validator).validateSync(object, options);
}
