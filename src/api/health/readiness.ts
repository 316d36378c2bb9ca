/** One dependency the server needs to serve traffic (`GET .../health/ready`). */
export interface ReadinessCheck {
  name: string;
  /** The agent (`name:version`) this dependency serves alone (a required MCP server); absent: every agent's. */
  agent?: string;
  /** Resolves when healthy; rejects (or times out) when not. */
  check(): Promise<void>;
}

export const READINESS_CHECKS = Symbol('READINESS_CHECKS');
