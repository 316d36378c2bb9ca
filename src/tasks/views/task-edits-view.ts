import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord } from '../../state/state.entities';
import { supersededBy } from '../lifecycle/edit';
import { requestView } from './task-view';

/**
 * `GET /tasks/{id}` with edits: superseded requests are hidden unless `include_superseded`; every
 * request shows `edit_of` (the request it replaced) and `superseded_by` (the edit that replaced it).
 */
export function withEdits<V extends { requests: ReturnType<typeof requestView>[] }>(view: V, requests: RequestRecord[], includeSuperseded: boolean) {
  const marks = supersededBy(requests);
  const byId = new Map(requests.map((r) => [r.requestId, r]));
  const shown = view.requests
    .filter((v) => includeSuperseded || !marks.has(v.request_id))
    .map((v) => ({ ...v, edit_of: byId.get(v.request_id)?.edits?.requestId ?? null, superseded_by: marks.get(v.request_id) ?? null }));
  return { ...view, requests: shown };
}

/** `?include=` of `GET /tasks/{id}`: a comma-separated list; only `superseded` is known. */
export function includesSuperseded(include: string | undefined): boolean {
  if (include === undefined || include === '') return false;
  const values = include.split(',').map((v) => v.trim());
  const unknown = values.filter((v) => v !== 'superseded');
  if (unknown.length) {
    const message = `include may name only "superseded" (got ${unknown.map((u) => JSON.stringify(u)).join(', ')})`;
    throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'include', message }] });
  }
  return true;
}
