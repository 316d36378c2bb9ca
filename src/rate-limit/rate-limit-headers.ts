import { LimitKind, LimitState } from './rate-limit-store';

/** A limit's name in the headers: `caller_rpm` → `caller-rpm`. */
export function policyName(kind: LimitKind): string {
  return kind.replace('_', '-');
}

/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers-11 (the
 * structured-field lists `"name";q=..;w=..` and `"name";r=..;t=..`). Concurrency has no window: its
 * policy carries `qu="concurrent-requests"` and no `w`. The token limit counts model tokens; the
 * draft has no unit for them, so it carries none (docs/configuration.md, "Rate limits").
 */
export function rateLimitHeaders(states: LimitState[], windowSeconds: number): Record<string, string> {
  const policy = states.map((s) =>
    s.kind === 'caller_concurrency'
      ? `"${policyName(s.kind)}";q=${s.limit};qu="concurrent-requests"`
      : `"${policyName(s.kind)}";q=${s.limit};w=${windowSeconds}`,
  );
  const current = states.map((s) => `"${policyName(s.kind)}";r=${s.remaining};t=${s.resetSeconds}`);
  return { 'RateLimit-Policy': policy.join(', '), RateLimit: current.join(', ') };
}
