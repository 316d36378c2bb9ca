/** node:http's exports (Node 22.5+) whose getters load Node's bundled undici, ~1 MB of JavaScript. */
const UNDICI_EXPORTS = ['WebSocket', 'CloseEvent', 'MessageEvent'] as const;

/**
 * Runs `load` (the app's modules) without node:http's three undici getters. NestJS is ESM and
 * imports 'http'; Node then builds that module's ES facade by reading every export once, and those
 * getters load and run the whole of undici (measured: ~100 ms of a boot, and the memory it holds)
 * although nothing in the server uses them: the model calls go over the server's own sockets
 * (src/common/http-client/http-exchange.ts), and undici loads on the first use of `fetch` and the like as before.
 *
 * The getters are back once `load` returns: `require('node:http').WebSocket` and the default
 * export's `.WebSocket` are undici's as ever. The one difference: the ES facade keeps the value it
 * read, so an ES module that imports `{ WebSocket, CloseEvent, MessageEvent }` by name from
 * node:http gets undefined (no package installed here does; the globals of the same names, the
 * usual way to reach them, are untouched). Nothing is changed when another module built the
 * facade first or a later Node defines these exports differently.
 */
export function withoutHttpUndiciExports<T>(load: () => T): T {
  const http = require('node:http') as Record<string, unknown>;
  const saved = UNDICI_EXPORTS.flatMap((name) => {
    const descriptor = Object.getOwnPropertyDescriptor(http, name);
    return descriptor?.get && descriptor.configurable ? [{ name, descriptor }] : [];
  });
  for (const { name } of saved) Object.defineProperty(http, name, { value: undefined, writable: true, enumerable: true, configurable: true });
  try {
    return load();
  } finally {
    for (const { name, descriptor } of saved) Object.defineProperty(http, name, descriptor);
  }
}
