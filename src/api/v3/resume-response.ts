import type { StateResponse } from '../../tasks/views/state-response';

/**
 * The body of `POST .../resume/{request_id}`, as upstream answers it: the content itself, not a
 * StateResponse — the `TealAgentsResponse` when the run completes, a `HitlResponse` when it pauses
 * again, a `RejectedToolResponse` when every pending call was rejected. `status` is our addition
 * (pydantic ignores unknown fields): the content alone does not say which of those it is.
 */
export function resumeResponseOf(response: StateResponse): Record<string, unknown> {
  return { ...response.content, status: response.status };
}
