import * as index from 'class-validator';
import * as parts from './class-validator-parts';

class Probe {
  @parts.IsOptional()
  @parts.IsString()
  @parts.MaxLength(3)
  name?: unknown;
}

describe('class-validator parts', () => {
  it.each(Object.keys(parts).filter((k) => k !== 'validateSync'))('%s is the index’s own (same file, same version)', (name) => {
    expect(parts[name as keyof typeof parts]).toBe(index[name as keyof typeof index]);
  });

  it('validateSync answers as the index’s does, from the same metadata', () => {
    for (const value of [undefined, 'ab', 'abcd', 42]) {
      const probe = Object.assign(new Probe(), { name: value });
      expect(parts.validateSync(probe, { forbidUnknownValues: true })).toEqual(index.validateSync(probe, { forbidUnknownValues: true }));
    }
    expect(parts.validateSync(Object.assign(new Probe(), { name: 42 })).map((e) => Object.keys(e.constraints ?? {}).sort())).toEqual([
      ['isString', 'maxLength'],
    ]);
  });
});
