import { agentLimitsOf } from '../../rate-limit/rate-limiter.service';
import { loadAgentConfigs } from './load-agent-configs';
import { configProblems, writeConfigDir } from './config.fixtures';

const dirWith = (yaml: string) => writeConfigDir({ 'a.yaml': yaml });

const agent = (limits: string, apiVersion = 'tealagents/v1alpha1') =>
  [`apiVersion: ${apiVersion}`, 'name: Bot', 'version: 0.1', 'spec:', '  agent:', '    name: default', '    model: local/echo', limits].join('\n') + '\n';

const problems = (yaml: string) => configProblems({ 'a.yaml': yaml });

describe('spec.limits', () => {
  it('overrides the TA_RATE_LIMIT_* defaults field by field; 0 lifts a default', () => {
    const [a] = loadAgentConfigs(dirWith(agent('  limits:\n    caller_rpm: 30\n    agent_rpm: 0\n    caller_tpm: 5000', 'skagents/v2alpha1')));
    expect(a!.limits).toMatchObject({ caller_rpm: 30, agent_rpm: 0, caller_tpm: 5000 });
    expect(agentLimitsOf(a!, { callerRpm: 60, agentRpm: 600, callerConcurrency: 4 })).toEqual({
      callerRpm: 30,
      agentRpm: undefined,
      callerConcurrency: 4,
      callerTpm: 5000,
    });
  });

  it('is no limit at all without spec.limits and without defaults (nothing to check per request)', () => {
    const [a] = loadAgentConfigs(dirWith(agent('')));
    expect(agentLimitsOf(a!, {})).toBeUndefined();
    expect(agentLimitsOf(a!, { callerConcurrency: 2 })).toEqual({ callerConcurrency: 2 });
  });

  it('refuses wrong values with the file:line format', () => {
    expect(problems(agent('  limits:\n    caller_rpm: -1\n    caller_concurrency: two\n    per_hour: 3'))).toEqual([
      'a.yaml:9: spec.limits.caller_rpm: must be an integer >= 0 (got -1)',
      'a.yaml:10: spec.limits.caller_concurrency: must be an integer >= 0 (got the string "two")',
      expect.stringMatching(/^a\.yaml:11: spec\.limits\.per_hour: /),
    ]);
    expect(problems(agent('  limits: 10'))).toEqual(['a.yaml:8: spec.limits: must be a mapping (got 10)']);
  });
});
