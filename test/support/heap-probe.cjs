'use strict';
// Preloaded (`node --expose-gc --require …/heap-probe.cjs`) into a server process a test spawns with
// an IPC channel: on the message 'heap' it runs full garbage collections and answers with the bytes
// of live heap, so the test can tell what the server still holds. Test-only; no route exposes this.
if (typeof global.gc !== 'function') throw new Error('heap-probe.cjs needs node --expose-gc');
process.on('message', (message) => {
  if (message !== 'heap') return;
  // Two passes: objects with finalizers or weak references are freed by the second.
  global.gc();
  global.gc();
  process.send({ heapUsed: process.memoryUsage().heapUsed });
});
// The IPC channel must not keep the server alive on its own, nor stop it exiting on SIGTERM.
process.channel?.unref();
