import type { RiskLevel } from '../agents/config/governance.schema';
import { approvalForTurn, approvalPolicyOf, DEFAULT_APPROVAL_POLICY, needsApproval } from './governance';

const tool = (risk: RiskLevel, requiresHitl?: boolean) => ({ risk, requiresHitl });

describe('needsApproval', () => {
  it.each([
    // level, read_only, write_low_risk, write_high_risk
    ['L0', true, true, true],
    ['L1', false, true, true],
    ['L2', false, false, true],
    ['L3', false, false, false],
  ] as const)('%s: read_only asks=%s, low=%s, high=%s', (level, ro, low, high) => {
    expect(needsApproval(level, tool('read_only'))).toBe(ro);
    expect(needsApproval(level, tool('write_low_risk'))).toBe(low);
    expect(needsApproval(level, tool('write_high_risk'))).toBe(high);
  });

  it('requires_hitl always asks, even at L3 and for read-only tools', () => {
    expect(needsApproval('L3', tool('read_only', true))).toBe(true);
    expect(needsApproval('L1', tool('read_only', false))).toBe(false);
  });

  it('a tool with no (or an unknown) risk is write_high_risk; an unknown tool does not run, so it is not asked', () => {
    expect(needsApproval('L2', { risk: undefined as unknown as RiskLevel })).toBe(true);
    expect(needsApproval('L2', { risk: 'bogus' as RiskLevel })).toBe(true);
    expect(needsApproval('L3', { risk: undefined as unknown as RiskLevel })).toBe(false);
    expect(needsApproval('L0', undefined)).toBe(false);
  });
});

describe('approvalForTurn', () => {
  const tools = new Map([
    ['r', tool('read_only')],
    ['w', tool('write_high_risk')],
  ]);
  const call = (id: string, name: string) => ({ id, name, arguments: '{}' });

  it('a turn of auto-run calls runs at once', () => {
    expect(approvalForTurn(DEFAULT_APPROVAL_POLICY, tools, [call('1', 'r'), call('2', 'r')])).toEqual({ pending: [], plan: false, reasons: {} });
  });

  it('below the plan threshold only the calls that need approval are pending', () => {
    expect(approvalForTurn(DEFAULT_APPROVAL_POLICY, tools, [call('1', 'r'), call('2', 'w')])).toEqual({
      pending: [call('2', 'w')],
      plan: false,
      reasons: { '2': 'autonomy_level' },
    });
  });

  it('at the plan threshold the whole turn is one plan when any call needs approval', () => {
    const calls = [call('1', 'r'), call('2', 'w'), call('3', 'r')];
    expect(approvalForTurn(DEFAULT_APPROVAL_POLICY, tools, calls)).toEqual({
      pending: calls,
      plan: true,
      reasons: { '1': 'plan', '2': 'autonomy_level', '3': 'plan' },
    });
    expect(approvalForTurn({ autonomy_level: 'L1', plan_threshold: 4 }, tools, calls).pending).toEqual([call('2', 'w')]);
    // no call needs approval: no plan, however many calls
    expect(approvalForTurn(DEFAULT_APPROVAL_POLICY, tools, [call('1', 'r'), call('2', 'r'), call('3', 'r')]).pending).toEqual([]);
  });

  it('says why each pending call needs approval: requires_hitl before the autonomy level', () => {
    const hitl = new Map([
      ['p', tool('read_only', true)],
      ['w', tool('write_high_risk', true)],
    ]);
    expect(approvalForTurn({ autonomy_level: 'L3', plan_threshold: 3 }, hitl, [call('1', 'p'), call('2', 'w')]).reasons).toEqual({
      '1': 'requires_hitl',
      '2': 'requires_hitl',
    });
  });
});

describe("without spec.governance: upstream's rule", () => {
  const call = (id: string, name: string) => ({ id, name, arguments: '{}' });
  // Every risk level, with and without a declared requires_hitl (catalog, plugin or MCP override).
  const tools = new Map<string, { risk: RiskLevel; requiresHitl?: boolean }>([
    ['hitl', tool('read_only', true)],
    ['high', tool('write_high_risk')],
    ['undeclared', { risk: undefined as unknown as RiskLevel }],
    ['cleared', tool('write_high_risk', false)],
  ]);
  const definition = (module: 'v1' | 'v2' | 'v3', governed: boolean) => ({
    module,
    governed,
    governance: { autonomy_level: 'L0' as const, plan_threshold: 3, on_paused: 'reject' as const },
  });

  it('picks the policy: ours with spec.governance (any apiVersion); upstream for v3 without; none for v1/v2 without', () => {
    for (const m of ['v1', 'v2', 'v3'] as const)
      expect(approvalPolicyOf(definition(m, true))).toEqual({ autonomy_level: 'L0', plan_threshold: 3, on_paused: 'reject' });
    expect(approvalPolicyOf(definition('v3', false))).toEqual({ mode: 'upstream' });
    expect(approvalPolicyOf(definition('v1', false))).toEqual({ mode: 'none' });
    expect(approvalPolicyOf(definition('v2', false))).toEqual({ mode: 'none' });
  });

  it('upstream (v3): only a declared requires_hitl asks; any risk, an undeclared risk or an unknown tool runs; never a plan', () => {
    const calls = [call('1', 'hitl'), call('2', 'high'), call('3', 'undeclared'), call('4', 'cleared'), call('5', 'nowhere')];
    expect(approvalForTurn({ mode: 'upstream' }, tools, calls)).toEqual({ pending: [call('1', 'hitl')], plan: false, reasons: { '1': 'requires_hitl' } });
    expect(approvalForTurn({ mode: 'upstream' }, tools, calls.slice(1))).toEqual({ pending: [], plan: false, reasons: {} });
  });

  it('none (v1/v2): every call runs, even a requires_hitl one', () => {
    const calls = [call('1', 'hitl'), call('2', 'high'), call('3', 'undeclared')];
    expect(approvalForTurn({ mode: 'none' }, tools, calls)).toEqual({ pending: [], plan: false, reasons: {} });
  });

  it('the same tools under spec.governance: the autonomy level and fail-closed risks apply', () => {
    const calls = [call('1', 'hitl'), call('2', 'high')];
    expect(approvalForTurn({ autonomy_level: 'L2', plan_threshold: 3 }, tools, calls)).toEqual({
      pending: calls,
      plan: false,
      reasons: { '1': 'requires_hitl', '2': 'autonomy_level' },
    });
    expect(approvalForTurn({ autonomy_level: 'L2', plan_threshold: 3 }, tools, [call('3', 'undeclared')]).pending).toHaveLength(1);
  });
});
