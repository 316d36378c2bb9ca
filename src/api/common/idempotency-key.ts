import type { Request } from 'express';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { claimOf, IdempotencyClaim } from '../../tasks/idempotency/idempotency-claim';
import { pathOf } from '../../common/http/url-path';

/**
 * The claim of the request's `Idempotency-Key` header for `operation` (undefined without one; 400
 * for a malformed key), fingerprinted over the path, the query and the parsed body: a repeat must
 * send the same request to the same URL to be answered as its first copy was.
 */
export function idempotencyClaim(
  req: Request,
  principal: Principal,
  agent: Pick<AgentDefinition, 'source'>,
  operation: string,
  body: unknown,
): IdempotencyClaim | undefined {
  return claimOf(req.headers['idempotency-key'], {
    tenantId: principal.tenantId,
    ownerId: principal.ownerId,
    agent: agent.source,
    operation,
    path: pathOf(req.originalUrl),
    query: req.query as Record<string, unknown>,
    body,
  });
}
