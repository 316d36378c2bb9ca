import { loadAgentConfigs } from './load-agent-configs';
import { configProblems, writeConfigDir } from './config.fixtures';

const dirWith = (yaml: string) => writeConfigDir({ 'a.yaml': yaml });

const agent = (history: string, apiVersion = 'tealagents/v1alpha1') =>
  [`apiVersion: ${apiVersion}`, 'name: Bot', 'version: 0.1', 'spec:', '  agent:', '    name: default', '    model: local/echo', history].join('\n') + '\n';

const problems = (yaml: string) => configProblems({ 'a.yaml': yaml });

describe('spec.agent.history', () => {
  it('is absent by default (no limit)', () => {
    const [a] = loadAgentConfigs(dirWith(agent('')));
    expect(a!.agent.history).toBeUndefined();
  });

  it('reads max_messages, max_tokens and strategy (default drop), on every apiVersion', () => {
    const [a] = loadAgentConfigs(dirWith(agent('    history:\n      max_messages: 6\n      max_tokens: 2000')));
    expect(a!.agent.history).toMatchObject({ max_messages: 6, max_tokens: 2000, strategy: 'drop' });
    const [b] = loadAgentConfigs(dirWith(agent('    history: {max_messages: 4, strategy: summarize}', 'skagents/v2alpha1')));
    expect(b!.agent.history).toMatchObject({ max_messages: 4, strategy: 'summarize' });
  });

  it('refuses wrong values with the file:line format', () => {
    expect(problems(agent('    history:\n      max_messages: 0\n      max_tokens: lots\n      strategy: forget\n      keep: 3'))).toEqual([
      'a.yaml:9: spec.agent.history.max_messages: must be an integer >= 1 (got 0)',
      'a.yaml:10: spec.agent.history.max_tokens: must be an integer >= 1 (got the string "lots")',
      'a.yaml:11: spec.agent.history.strategy: must be one of drop, summarize (got the string "forget")',
      expect.stringMatching(/^a\.yaml:12: spec\.agent\.history\.keep: /),
    ]);
    expect(problems(agent('    history: 10'))).toEqual(['a.yaml:8: spec.agent.history: must be a mapping (got 10)']);
  });
});
