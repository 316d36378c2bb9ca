import { TokenUsage } from '../llm/llm-client.port';

export interface ExtraData {
  items: { key: string; value: string }[];
}

/**
 * The answer's `extra_data`: the items the tools of the request added (upstream's
 * `extra_data_collector`), in the order of their calls; `null` when none, as upstream answers.
 */
export function extraDataOf(calls: readonly { extra_data?: { key: string; value: string }[] }[]): ExtraData | null {
  const items = calls.flatMap((c) => c.extra_data ?? []);
  return items.length ? { items } : null;
}

/** Stateless (v1/v2) response, field for field as upstream (API.md §3). */
export interface InvokeResponse {
  session_id: string | null;
  source: string;
  request_id: string;
  token_usage: TokenUsage;
  extra_data: ExtraData | null;
  output_raw: string | null;
  output_pydantic: unknown;
}

export interface PartialResponse {
  session_id: string | null;
  source: string;
  request_id: string;
  output_partial: string;
}

/** One finished non-final task of a Sequential agent (SSE `intermediate-task-response`). */
export interface IntermediateTaskResponse {
  task_no: number;
  task_name: string;
  response: InvokeResponse;
}

/** What a stateless stream emits, in order; the controller frames each as an SSE event. */
export type StatelessStreamEvent =
  | { event: 'partial-response'; data: PartialResponse }
  | { event: 'intermediate-task-response'; data: IntermediateTaskResponse }
  | { event: 'final-response'; data: InvokeResponse };
