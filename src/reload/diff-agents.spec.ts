import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfigs } from '../agents/config/load-agent-configs';
import { diffAgents } from './diff-agents';

const chat = (name: string, prompt: string) =>
  `apiVersion: skagents/v1\nkind: Chat\nservice_name: ${name}\nversion: 1.0\ninput_type: BaseInput\nspec:\n  agent:\n    name: default\n    model: local/echo\n    system_prompt: ${prompt}\n`;

/** The directory holds exactly `files` now (as after an edit), and is loaded. */
function load(dir: string, files: Record<string, string>) {
  for (const name of readdirSync(dir)) if (!(name in files)) rmSync(join(dir, name));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return loadAgentConfigs(dir);
}
const newDir = () => mkdtempSync(join(tmpdir(), 'ta-diff-'));

describe('diffAgents', () => {
  it('names added, changed and removed prefixes, and nothing for an identical config', () => {
    const dir = newDir();
    const before = load(dir, { 'a.yaml': chat('A', 'one'), 'b.yaml': chat('B', 'one') });
    const after = load(dir, { 'a.yaml': chat('A', 'two'), 'c.yaml': chat('C', 'one') });
    expect(diffAgents(before, after)).toEqual({ added: ['/C/1.0'], changed: ['/A/1.0'], removed: ['/B/1.0'] });
    expect(diffAgents(before, load(dir, { 'a.yaml': chat('A', 'one'), 'b.yaml': chat('B', 'one') }))).toEqual({ added: [], changed: [], removed: [] });
  });

  it('sees a change inside a Sequential agent (its agents are a Map)', () => {
    const seq = (prompt: string) =>
      `apiVersion: skagents/v1\nkind: Sequential\nservice_name: Seq\nversion: 1.0\ninput_type: BaseInput\nspec:\n  agents:\n    - name: a\n      model: local/echo\n      system_prompt: ${prompt}\n  tasks:\n    - name: t\n      task_no: 1\n      description: d\n      instructions: i\n      agent: a\n`;
    const dir = newDir();
    expect(diffAgents(load(dir, { 's.yaml': seq('one') }), load(dir, { 's.yaml': seq('two') })).changed).toEqual(['/Seq/1.0']);
  });
});
