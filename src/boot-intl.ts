type DateTimeFormatConstructor = typeof Intl.DateTimeFormat;

/**
 * Runs `load` (the app's modules) with `Intl.DateTimeFormat` building its formatter on first use.
 * NestJS's console logger makes one when its module loads, and building a date formatter reads
 * ICU's locale data: measured in the benchmark, ~6 MiB of the node binary's data pages then stay
 * resident for the life of the process (idle RSS 98.9 → 92.9 MiB without it), although this server
 * logs through pino and that formatter is never used.
 *
 * Only what is made during `load` is deferred: `Intl.DateTimeFormat` is Node's own again when
 * `load` returns. A deferred formatter answers as the real one does (its methods and `format`
 * getter forward to the formatter built at the first of them); it is not `instanceof` the real
 * constructor, which the loggers that make one at load time do not ask.
 */
export function withLazyDateTimeFormats<T>(load: () => T): T {
  const real = Intl.DateTimeFormat;
  const intl = Intl as { DateTimeFormat: DateTimeFormatConstructor };
  intl.DateTimeFormat = lazyDateTimeFormat(real);
  try {
    return load();
  } finally {
    intl.DateTimeFormat = real;
  }
}

function lazyDateTimeFormat(real: DateTimeFormatConstructor): DateTimeFormatConstructor {
  const built = new WeakMap<object, Intl.DateTimeFormat>();
  const args = new WeakMap<object, ConstructorParameters<DateTimeFormatConstructor>>();
  const formatterOf = (self: object): Intl.DateTimeFormat => {
    let formatter = built.get(self);
    if (!formatter) {
      formatter = new real(...(args.get(self) ?? []));
      built.set(self, formatter);
    }
    return formatter;
  };
  // Callable with or without `new`, as the real one is.
  function LazyDateTimeFormat(this: unknown, ...params: ConstructorParameters<DateTimeFormatConstructor>): Intl.DateTimeFormat {
    const self = Object.create(LazyDateTimeFormat.prototype as object) as Intl.DateTimeFormat;
    args.set(self, params);
    return self;
  }
  for (const name of Reflect.ownKeys(real.prototype)) {
    if (name === 'constructor') continue;
    const descriptor = Object.getOwnPropertyDescriptor(real.prototype, name)!;
    if (typeof descriptor.value === 'function') {
      const method = descriptor.value as (...a: unknown[]) => unknown;
      Object.defineProperty(LazyDateTimeFormat.prototype, name, {
        ...descriptor,
        value(this: object, ...a: unknown[]) {
          return method.apply(formatterOf(this), a);
        },
      });
    } else if (descriptor.get) {
      const get = descriptor.get;
      Object.defineProperty(LazyDateTimeFormat.prototype, name, {
        ...descriptor,
        get: function (this: object) {
          return get.call(formatterOf(this));
        },
      });
    } else {
      Object.defineProperty(LazyDateTimeFormat.prototype, name, descriptor); // Symbol.toStringTag
    }
  }
  if (typeof real.supportedLocalesOf === 'function') {
    Object.defineProperty(LazyDateTimeFormat, 'supportedLocalesOf', { value: real.supportedLocalesOf.bind(real), writable: true, configurable: true });
  }
  return LazyDateTimeFormat as unknown as DateTimeFormatConstructor;
}
