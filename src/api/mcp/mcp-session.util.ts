import { newUuid } from '../../common/ids/uuid.util';

/** The suffix of a session id whose client declared the elicitation capability (form mode). */
const ELICITS = '.elicit';

/**
 * The `Mcp-Session-Id` the `initialize` answer carries. The transport is stateless (any replica
 * serves any request, docs/mcp.md, Sessions), so what a later request needs of the session travels
 * in its id: only whether the client can answer elicitations. Nothing else is kept, and a client
 * that forges the suffix changes only how its own pauses are presented to it.
 */
export function sessionIdFor(initializeParams: unknown): string {
  return `${newUuid()}${declaresElicitation(initializeParams) ? ELICITS : ''}`;
}

/** Whether the client of this session id declared the elicitation capability. */
export function sessionElicits(sessionId: string | undefined): boolean {
  return !!sessionId?.endsWith(ELICITS);
}

/** `capabilities.elicitation` as `{}` (form mode, the 2025-06-18 shape) or with `form` (2025-11-25). */
function declaresElicitation(params: unknown): boolean {
  const capabilities = (params as { capabilities?: { elicitation?: { form?: unknown; url?: unknown } } } | undefined)?.capabilities;
  const elicitation = capabilities?.elicitation;
  if (typeof elicitation !== 'object' || elicitation === null) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}
