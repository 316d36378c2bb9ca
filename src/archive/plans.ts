import { ArchiveEvent } from './archive-event';

export type PlanStatus = 'proposed' | 'approved' | 'rejected' | 'refined' | 'expired' | 'executing' | 'completed' | 'failed';

/** One plan of a task (`GET /{name}/{version}/tasks/{task_id}/plans`): a pause of a request and what became of it. */
export interface PlanView {
  plan_id: string;
  request_id: string;
  status: PlanStatus;
  /** The turn was one plan (plan_threshold), decided as a whole; false: calls decided one by one. */
  plan: boolean;
  steps: unknown[];
  max_risk: string | null;
  proposed_at: string;
  approved_at: string | null;
  /** When the first approved call started. */
  executed_at: string | null;
  /** When the last approved call ended (completed), or the plan was decided, refined or expired otherwise. */
  completed_at: string | null;
  /** executed_at → completed_at, for a plan that ran. */
  duration_ms: number | null;
  decided_by: string | null;
  reason: string | null;
}

/**
 * The plans of a task, folded from its events in timeline order (the live task's derived events, or
 * the archive's once it is gone: one rule for both). A pause's status:
 * - `proposed` while it waits; `refined` when a new message replaced it; `expired` when its TTL ended it;
 * - `rejected` when nothing of it was approved (or its request was canceled while it waited);
 * - `approved` → `executing` once an approved call started → `completed` when every approved call
 *   ended and the request went on (completed, or paused again), `failed` when the request failed.
 */
export function plansOf(events: ArchiveEvent[]): PlanView[] {
  const plans = new Map<string, PlanView & { approved: Set<string>; ended: Set<string> }>();
  const byCall = new Map<string, string>();
  const ofRequest = (requestId: string | undefined) => [...plans.values()].filter((p) => p.request_id === requestId);
  for (const e of events) {
    const p = e.payload as Record<string, unknown>;
    switch (e.type) {
      case 'plan_proposed': {
        const id = String(p.pause_id);
        const steps = (p.steps as { tool_call_id: string }[]) ?? [];
        for (const s of steps) byCall.set(`${e.requestId}/${s.tool_call_id}`, id);
        plans.set(id, {
          plan_id: id,
          request_id: e.requestId ?? '',
          status: 'proposed',
          plan: p.plan === true,
          steps,
          max_risk: (p.max_risk as string | undefined) ?? null,
          proposed_at: e.at,
          approved_at: null,
          executed_at: null,
          completed_at: null,
          duration_ms: null,
          decided_by: null,
          reason: null,
          approved: new Set(),
          ended: new Set(),
        });
        break;
      }
      case 'decision': {
        const plan = plans.get(String(p.pause_id));
        if (!plan) break;
        const approved = (p.approved as string[]) ?? [];
        plan.decided_by = (p.decided_by as string | undefined) ?? null;
        plan.reason = (p.reason as string | undefined) ?? null;
        if (approved.length) {
          plan.status = 'approved';
          plan.approved_at = e.at;
          for (const id of approved) plan.approved.add(id);
        } else {
          plan.status = 'rejected';
          plan.completed_at = e.at;
        }
        break;
      }
      case 'plan_refined':
      case 'approval_expired': {
        const plan = plans.get(String(p.pause_id));
        if (!plan) break;
        plan.status = e.type === 'plan_refined' ? 'refined' : 'expired';
        plan.completed_at = e.at;
        if (e.type === 'plan_refined') {
          plan.decided_by = (p.refined_by as string | undefined) ?? null;
          if (typeof p.text === 'string') plan.reason = p.text;
        }
        break;
      }
      case 'tool_call_started': {
        const plan = plans.get(byCall.get(`${e.requestId}/${String(p.tool_call_id)}`) ?? '');
        if (!plan || !plan.approved.has(String(p.tool_call_id))) break;
        plan.status = 'executing';
        plan.executed_at ??= e.at;
        break;
      }
      case 'tool_call_completed':
      case 'tool_call_failed': {
        const plan = plans.get(byCall.get(`${e.requestId}/${String(p.tool_call_id)}`) ?? '');
        if (!plan || !plan.approved.has(String(p.tool_call_id))) break;
        plan.ended.add(String(p.tool_call_id));
        if (plan.ended.size >= plan.approved.size) finish(plan, 'completed', e.at);
        break;
      }
      case 'request_completed':
      case 'request_failed':
      case 'request_canceled':
        for (const plan of ofRequest(e.requestId)) {
          if (plan.status === 'proposed') finish(plan, 'rejected', e.at);
          else if (plan.status === 'approved' || plan.status === 'executing') finish(plan, e.type === 'request_completed' ? 'completed' : 'failed', e.at);
        }
        break;
      default:
        break;
    }
  }
  return [...plans.values()].map(({ approved: _a, ended: _e, ...view }) => view);
}

function finish(plan: PlanView, status: PlanStatus, at: string): void {
  plan.status = status;
  plan.completed_at ??= at;
  if (status === 'completed' && plan.executed_at) plan.duration_ms = Date.parse(plan.completed_at) - Date.parse(plan.executed_at);
}
