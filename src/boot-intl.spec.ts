import { withLazyDateTimeFormats } from './boot-intl';

const OPTIONS: Intl.DateTimeFormatOptions = {
  timeZone: 'UTC',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
};
const WHEN = Date.UTC(2026, 10, 24, 13, 5, 9);

describe('withLazyDateTimeFormats', () => {
  const original = Intl.DateTimeFormat;
  let built: number;
  beforeEach(() => {
    built = 0;
    // Counts the formatters really built (what holds ICU's data), in place of Node's constructor.
    (Intl as { DateTimeFormat: unknown }).DateTimeFormat = function Counting(...a: ConstructorParameters<typeof Intl.DateTimeFormat>) {
      built++;
      return new original(...a);
    };
    Object.assign(Intl.DateTimeFormat, { prototype: original.prototype, supportedLocalesOf: original.supportedLocalesOf });
  });
  afterEach(() => {
    (Intl as { DateTimeFormat: unknown }).DateTimeFormat = original;
  });

  it('a formatter made while loading is built on its first use, and then answers as the real one', () => {
    const counting = Intl.DateTimeFormat;
    const lazy = withLazyDateTimeFormats(() => new Intl.DateTimeFormat('en-US', OPTIONS));
    const called = withLazyDateTimeFormats(() =>
      (Intl.DateTimeFormat as unknown as (l: string, o: Intl.DateTimeFormatOptions) => Intl.DateTimeFormat)('en-US', OPTIONS),
    );
    expect(Intl.DateTimeFormat).toBe(counting); // the constructor is back as soon as loading ends
    expect(built).toBe(0);

    const real = new original('en-US', OPTIONS);
    expect(lazy.format(WHEN)).toBe(real.format(WHEN));
    expect(built).toBe(1);
    const detached = lazy.format; // a getter returning a bound function, as the real one's
    expect(detached(WHEN)).toBe('11/24/2026, 01:05:09 PM');
    expect(lazy.formatToParts(WHEN)).toEqual(real.formatToParts(WHEN));
    expect(lazy.resolvedOptions()).toEqual(real.resolvedOptions());
    expect(Object.prototype.toString.call(lazy)).toBe('[object Intl.DateTimeFormat]');
    expect(built).toBe(1); // one real formatter per lazy one
    expect(called.format(WHEN)).toBe(real.format(WHEN));
    expect(built).toBe(2);
    expect((withLazyDateTimeFormats(() => Intl.DateTimeFormat) as typeof Intl.DateTimeFormat).supportedLocalesOf(['en-US'])).toEqual(['en-US']);
  });

  it('puts the real constructor back when loading throws', () => {
    const counting = Intl.DateTimeFormat;
    expect(() =>
      withLazyDateTimeFormats(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(Intl.DateTimeFormat).toBe(counting);
  });
});
