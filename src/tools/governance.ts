import type { AgentDefinition } from '../agents/config/agent-definition';
import type { AutonomyLevel, RiskLevel } from '../agents/config/governance.schema';
import type { LlmToolCall } from '../llm/llm-client.port';
import type { Tool } from './tool.port';

/** What `spec.governance` says about approvals (defaults as in CONFIG.md: L1, plan_threshold 3). */
export interface GovernedApprovalPolicy {
  mode?: 'governed';
  autonomy_level: AutonomyLevel;
  plan_threshold: number;
}

/**
 * How an agent's tool calls are approved (CONFIG.md, docs/tools.md "Approvals"):
 * - governed: the agent has `spec.governance`; autonomy level, risks, `requires_hitl` and plans,
 *   a tool with no declared risk counting as write_high_risk (fail closed);
 * - upstream: no `spec.governance` on a tealagents/v1alpha1 agent; as upstream, a call waits only
 *   when its tool is declared `requires_hitl: true` (the plugin catalog, or the plugin's or MCP
 *   server's own declaration); every other tool runs, whatever its risk;
 * - none: no `spec.governance` on a skagents v1/v2 agent; upstream has no approvals there, so
 *   every tool runs.
 */
export type ApprovalPolicy = GovernedApprovalPolicy | { mode: 'upstream' } | { mode: 'none' };

export const DEFAULT_APPROVAL_POLICY: GovernedApprovalPolicy = { autonomy_level: 'L1', plan_threshold: 3 };

/** The approval policy of an agent: ours when it has `spec.governance`, else upstream's (see ApprovalPolicy). */
export function approvalPolicyOf(agent: Pick<AgentDefinition, 'governed' | 'governance' | 'module'>): ApprovalPolicy {
  if (agent.governed) return agent.governance;
  return agent.module === 'v3' ? { mode: 'upstream' } : { mode: 'none' };
}

/** The highest risk each autonomy level runs without asking. L0 runs nothing on its own. */
const AUTO_UP_TO: Record<AutonomyLevel, number> = { L0: -1, L1: 0, L2: 1, L3: 2 };
const RISK_RANK: Record<RiskLevel, number> = { read_only: 0, write_low_risk: 1, write_high_risk: 2 };

/**
 * Whether a tool call needs a human's approval before it runs. The tool's `risk` and `requiresHitl`
 * already carry every source (the plugin's own declaration, MCP annotations, the plugin catalog,
 * `spec.governance.tools`: see Toolset). A tool with no declared risk counts as write_high_risk
 * (fail closed); `requiresHitl` always asks, whatever the level. An unknown tool needs no approval:
 * it does not run (the model gets an "unknown tool" error result).
 */
export function needsApproval(level: AutonomyLevel, tool: Pick<Tool, 'risk' | 'requiresHitl'> | undefined): boolean {
  if (!tool) return false;
  if (tool.requiresHitl === true) return true;
  const risk = RISK_RANK[tool.risk] ?? RISK_RANK.write_high_risk;
  return risk > AUTO_UP_TO[level];
}

/** Why a call needs approval: its own `requires_hitl`, its risk above the autonomy level, or its plan. */
export type ApprovalReason = 'requires_hitl' | 'autonomy_level' | 'plan' | 'client_tool';

/** The approval verdict on one model turn. */
export interface TurnApproval {
  /** The calls a human must decide on, in call order (empty: the turn runs at once). */
  pending: LlmToolCall[];
  /** The turn is shown as one plan: every call is pending and is approved or rejected as a whole. */
  plan: boolean;
  /** Why each pending call needs approval, by call id. */
  reasons: Record<string, ApprovalReason>;
}

/** Why a tool call needs approval, or undefined when it does not (see needsApproval). */
export function approvalReason(level: AutonomyLevel, tool: Pick<Tool, 'risk' | 'requiresHitl'> | undefined): ApprovalReason | undefined {
  if (!needsApproval(level, tool)) return undefined;
  return tool?.requiresHitl === true ? 'requires_hitl' : 'autonomy_level';
}

/**
 * The verdict on a whole model turn. A turn with a call that needs approval waits as a whole (the
 * calls that need none run together with the approved ones after the decision, so the model gets
 * all results of its turn at once and nothing runs that a later rejection might contradict). A turn
 * of at least `plan_threshold` calls in which any call needs approval is one plan: all of its calls
 * are pending, to be approved or rejected together. Without `spec.governance` (upstream and none
 * modes) only a declared `requires_hitl: true` asks, and never in a v1/v2 agent.
 */
export function approvalForTurn(policy: ApprovalPolicy, tools: ReadonlyMap<string, Pick<Tool, 'risk' | 'requiresHitl'>>, calls: LlmToolCall[]): TurnApproval {
  const reasons: Record<string, ApprovalReason> = {};
  if (policy.mode === 'none') return { pending: [], plan: false, reasons };
  if (policy.mode === 'upstream') {
    // Upstream's rule (hitl_manager.check_for_intervention): only a declared requires_hitl asks; an
    // undeclared or unknown tool does not; no plans.
    const pending = calls.filter((c) => tools.get(c.name)?.requiresHitl === true);
    for (const c of pending) reasons[c.id] = 'requires_hitl';
    return { pending, plan: false, reasons };
  }
  for (const c of calls) {
    const why = approvalReason(policy.autonomy_level, tools.get(c.name));
    if (why) reasons[c.id] = why;
  }
  const pending = calls.filter((c) => reasons[c.id]);
  if (!pending.length) return { pending: [], plan: false, reasons };
  if (calls.length >= policy.plan_threshold) {
    for (const c of calls) reasons[c.id] ??= 'plan';
    return { pending: [...calls], plan: true, reasons };
  }
  return { pending, plan: false, reasons };
}

/** What the model reads as the result of a call its user rejected (with the user's reason, if given). */
export function rejectedResult(call: Pick<LlmToolCall, 'name'>, reason?: string): string {
  const why = reason ? ` The user's reason: ${reason}.` : '';
  return `Error: the user rejected this call of ${call.name}; it did not run.${why} Do not retry it unless the user asks.`;
}

/** What the model reads in a stateless (v1/v2) call for a tool that needs approval. */
export function approvalUnavailableResult(call: Pick<LlmToolCall, 'name'>): string {
  return (
    `Error: ${call.name} needs a human's approval before it runs, and this stateless call cannot pause for one; ` +
    'it did not run. Tell the user to use the stateful (tealagents/v1alpha1) API, or to raise the autonomy level.'
  );
}
