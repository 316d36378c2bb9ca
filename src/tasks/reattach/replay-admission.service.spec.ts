import type { EnvConfig } from '../../config/env.config';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { ReplayAdmissionService } from './replay-admission.service';

const admission = (maxPerCaller: number, maxPerReplica: number) =>
  new ReplayAdmissionService({ http: { streamReplay: { maxPerCaller, maxPerReplica } } } as unknown as EnvConfig);
const alice = { tenantId: 't', ownerId: 'alice' };
const bob = { tenantId: 't', ownerId: 'bob' };
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err as DomainError;
  }
  throw new Error('admitted');
};

describe('ReplayAdmissionService', () => {
  it('refuses past the per-caller cap with TOO_MANY_STREAMS and Retry-After; a release makes room again (once)', () => {
    const a = admission(2, 10);
    const first = a.admit(alice);
    a.admit(alice);
    const refused = refusal(() => a.admit(alice));
    expect(refused.code).toBe(ErrorCode.TOO_MANY_STREAMS);
    expect(refused.retryAfter).toBeGreaterThan(0);
    a.admit(bob); // another caller is not affected
    first();
    first(); // a second release does not free a second place
    a.admit(alice);
    expect(refusal(() => a.admit(alice)).code).toBe(ErrorCode.TOO_MANY_STREAMS);
  });

  it('refuses past the per-replica cap whoever asks', () => {
    const a = admission(5, 2);
    a.admit(alice);
    a.admit(bob);
    expect(refusal(() => a.admit({ tenantId: 'u', ownerId: 'carol' })).code).toBe(ErrorCode.TOO_MANY_STREAMS);
  });
});
