'use strict';
// Preloaded before a probe by a test of the probe itself: fs.writeFileSync writes the first half of
// its data, waits 300 ms, then the rest, as a write on a loaded machine may be seen half done.
const fs = require('node:fs');
const realWrite = fs.writeFileSync;
fs.writeFileSync = function slowWriteFileSync(path, data, ...rest) {
  const text = String(data);
  const half = Math.floor(text.length / 2);
  realWrite(path, text.slice(0, half), ...rest);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
  realWrite(path, text.slice(half), { flag: 'a' });
};
