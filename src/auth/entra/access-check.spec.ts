import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { applyOverride } from '../access-policy';
import { checkAccess } from './access-check';
import type { EntraIdentity } from './entra-identity';

const user = (scopes: string[], roles: string[] = []): EntraIdentity => ({
  tenantId: 't',
  objectId: 'o',
  tokenVersion: '2.0',
  kind: 'delegated',
  scopes,
  roles,
  acceptedUntilMs: 0,
});
const app = (roles: string[]): EntraIdentity => ({ ...user([]), kind: 'app', roles });
const policy = { requiredScopes: ['agents.invoke', 'agents.all'], requiredRoles: ['Agents.Invoke'] };

function outcome(identity: EntraIdentity, p = policy): string {
  try {
    checkAccess(identity, p);
    return 'allowed';
  } catch (e) {
    const err = e as DomainError;
    return `${err.code} ${err.headers?.['WWW-Authenticate']}`;
  }
}

describe('checkAccess', () => {
  it.each([
    ['a user with one of the scopes', user(['agents.read', 'agents.all']), 'allowed'],
    ['a user without them', user(['agents.read']), ErrorCode.FORBIDDEN],
    ['a user holding a required ROLE but no scope', user([], ['Agents.Invoke']), ErrorCode.FORBIDDEN],
    ['an app with the role', app(['Agents.Invoke']), 'allowed'],
    ['an app without it', app(['Other']), ErrorCode.FORBIDDEN],
    ['an app with no roles at all', app([]), ErrorCode.FORBIDDEN],
  ])('%s: %s', (_name, identity, expected) => {
    expect(outcome(identity).split(' ')[0]).toBe(expected);
  });

  it('says insufficient_scope and which scopes would do, in the RFC 6750 challenge', () => {
    expect(outcome(user([]))).toBe(
      'FORBIDDEN Bearer error="insufficient_scope", scope="agents.invoke agents.all", error_description="the token needs one of these scopes (scp): agents.invoke, agents.all"',
    );
  });

  it('fails closed: a token kind with no requirement configured is refused', () => {
    expect(outcome(app(['Agents.Invoke']), { requiredScopes: ['agents.invoke'], requiredRoles: [] })).toMatch(/^FORBIDDEN .*does not accept app-only tokens/);
    expect(outcome(user(['agents.invoke']), { requiredScopes: [], requiredRoles: ['Agents.Invoke'] })).toMatch(/^FORBIDDEN .*does not accept delegated/);
  });

  it("an agent's spec.auth replaces each list it gives, and keeps the others", () => {
    expect(applyOverride(policy, { required_roles: ['Orchestrator'] })).toEqual({
      requiredScopes: policy.requiredScopes,
      requiredRoles: ['Orchestrator'],
    });
    expect(applyOverride(policy, undefined)).toBe(policy);
  });
});
