/**
 * A demo plugin for the approval flow (demos/agents/guarded-notes.yaml): a note list per caller,
 * kept in memory. Tools seen by the model: `Notes-list` (read_only: runs at once under L1),
 * `Notes-save` (write_low_risk) and `Notes-delete` (write_high_risk): these wait for a human.
 */
import type { PluginDefinition } from '../../src/tools/plugins/plugin.types';

const byOwner = new Map<string, Map<string, string>>();
const notesOf = (owner: string) => byOwner.get(owner) ?? byOwner.set(owner, new Map()).get(owner)!;
const title = { type: 'string', description: 'The note title' };

export const plugins: PluginDefinition[] = [
  {
    name: 'Notes',
    description: "The caller's notes",
    tools: [
      {
        name: 'list',
        description: 'Lists the notes',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        risk: 'read_only',
        handler: (_args: unknown, ctx: { principal: { ownerId: string } }) => {
          const notes = [...notesOf(ctx.principal.ownerId)].map(([t, body]) => `${t}: ${body}`);
          return notes.length ? notes.join('\n') : 'No notes.';
        },
      },
      {
        name: 'save',
        description: 'Saves a note (replacing one of the same title)',
        parameters: { type: 'object', properties: { title, body: { type: 'string' } }, required: ['title', 'body'], additionalProperties: false },
        risk: 'write_low_risk',
        handler: ({ title, body }: { title: string; body: string }, ctx: { principal: { ownerId: string } }) => {
          notesOf(ctx.principal.ownerId).set(title, body);
          return `Saved ${title}`;
        },
      },
      {
        name: 'delete',
        description: 'Deletes a note for good',
        parameters: { type: 'object', properties: { title }, required: ['title'], additionalProperties: false },
        risk: 'write_high_risk',
        handler: ({ title }: { title: string }, ctx: { principal: { ownerId: string } }) =>
          notesOf(ctx.principal.ownerId).delete(title) ? `Deleted ${title}` : `Error: no note ${title}`,
      },
    ],
  },
];
