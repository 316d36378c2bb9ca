/**
 * A demo plugin in TypeScript: exact arithmetic the model should not do in its head.
 * Tools seen by the model: `Calculator-add`, `Calculator-multiply`, `Calculator-divide`.
 * Only types are imported from the server, so Node runs this file as is (type stripping).
 */
import type { PluginDefinition } from '../../src/tools/plugins/plugin.types';

const pair = {
  type: 'object',
  properties: { a: { type: 'number', description: 'First operand' }, b: { type: 'number', description: 'Second operand' } },
  required: ['a', 'b'],
  additionalProperties: false,
};

export const plugins: PluginDefinition[] = [
  {
    name: 'Calculator',
    description: 'Exact arithmetic',
    tools: [
      {
        name: 'add',
        description: 'Adds two numbers',
        parameters: pair,
        risk: 'read_only',
        handler: ({ a, b }: { a: number; b: number }) => String(a + b),
      },
      {
        name: 'multiply',
        description: 'Multiplies two numbers',
        parameters: pair,
        risk: 'read_only',
        handler: ({ a, b }: { a: number; b: number }) => String(a * b),
      },
      {
        name: 'divide',
        description: 'Divides a by b',
        parameters: pair,
        risk: 'read_only',
        handler: ({ a, b }: { a: number; b: number }) => {
          if (b === 0) throw new Error('cannot divide by zero');
          return String(a / b);
        },
      },
    ],
  },
];
