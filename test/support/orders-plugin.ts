import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A plugin whose one tool, `Orders-place`, has a side effect a test can count across processes:
 * each call appends its `id` to a file in the agent directory. For "ran exactly once" claims.
 */
export function writeOrdersPlugin(dir: string): { placed: (id: string) => number } {
  const counter = join(dir, 'placed.log');
  writeFileSync(
    join(dir, 'custom_plugins.js'),
    `
const { appendFileSync } = require('node:fs');
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Orders', tools: [
  { name: 'place', description: 'Places an order', parameters: id, handler: ({ id }) => { appendFileSync(${JSON.stringify(counter)}, id + '\\n'); return 'placed ' + id; } },
] }];
`,
  );
  return {
    placed: (id) =>
      existsSync(counter)
        ? readFileSync(counter, 'utf8')
            .split('\n')
            .filter((l) => l === id).length
        : 0,
  };
}
