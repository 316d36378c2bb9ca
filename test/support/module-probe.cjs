'use strict';
// Preloaded (NODE_OPTIONS="--require …/module-probe.cjs") into a server process a test starts: on
// SIGUSR2 it writes to MODULE_PROBE_FILE what the process has loaded (the files of its CommonJS
// module cache), the size of V8's young generation and how many Intl.DateTimeFormat were built, as JSON, so a test can tell which packages a
// configuration pulls in at boot. ES modules (NestJS itself) are not in that cache: their URLs are
// recorded as they load (`esModules`). Test-only.
const { renameSync, writeFileSync } = require('node:fs');
const { registerHooks } = require('node:module');
const { getHeapSpaceStatistics } = require('node:v8');

const file = process.env.MODULE_PROBE_FILE;
if (!file) throw new Error('module-probe.cjs needs MODULE_PROBE_FILE');

// Counts the Intl.DateTimeFormat formatters really built (each reads ICU's locale data).
let dateTimeFormats = 0;
const RealDateTimeFormat = Intl.DateTimeFormat;
Intl.DateTimeFormat = function DateTimeFormat(...args) {
  dateTimeFormats++;
  return new RealDateTimeFormat(...args);
};
Object.assign(Intl.DateTimeFormat, { prototype: RealDateTimeFormat.prototype, supportedLocalesOf: RealDateTimeFormat.supportedLocalesOf });

// Every ES module the process loads, by URL (a load hook sees each module once).
const esModules = [];
registerHooks({
  load(url, context, nextLoad) {
    const loaded = nextLoad(url, context);
    if (loaded.format === 'module') esModules.push(url);
    return loaded;
  },
});

process.on('SIGUSR2', () => {
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  // `builtins`: Node's own modules the process has loaded (process.moduleLoadList), by id.
  const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length));
  // A temporary file renamed into place: the name appears only once the JSON is whole, so a reader
  // waiting for it never parses half a file (test/support/probe-file.ts).
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(
    partial,
    JSON.stringify({ modules: Object.keys(require.cache), esModules, builtins, newSpaceBytes: newSpace ? newSpace.space_size : undefined, dateTimeFormats }),
  );
  renameSync(partial, file);
});
