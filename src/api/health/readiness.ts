/** One dependency the server needs to serve traffic (`GET .../health/ready`). */
export interface ReadinessCheck {
  name: string;
  /** Resolves when healthy; rejects (or times out) when not. */
  check(): Promise<void>;
}

export const READINESS_CHECKS = Symbol('READINESS_CHECKS');
