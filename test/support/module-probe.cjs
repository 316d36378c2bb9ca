'use strict';
// Preloaded (NODE_OPTIONS="--require …/module-probe.cjs") into a server process a test starts: on
// SIGUSR2 it writes to MODULE_PROBE_FILE what the process has loaded (the files of its CommonJS
// module cache) and the size of V8's young generation, as JSON, so a test can tell which packages a
// configuration pulls in at boot. ES modules (NestJS itself) are not in that cache. Test-only.
const { writeFileSync } = require('node:fs');
const { getHeapSpaceStatistics } = require('node:v8');

const file = process.env.MODULE_PROBE_FILE;
if (!file) throw new Error('module-probe.cjs needs MODULE_PROBE_FILE');
process.on('SIGUSR2', () => {
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  // `builtins`: Node's own modules the process has loaded (process.moduleLoadList), by id.
  const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice('NativeModule '.length));
  writeFileSync(file, JSON.stringify({ modules: Object.keys(require.cache), builtins, newSpaceBytes: newSpace ? newSpace.space_size : undefined }));
});
