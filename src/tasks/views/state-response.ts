import { TokenUsage } from '../../llm/llm-client.port';
import { ExtraData } from '../../invocation/invoke-response';

export interface TealAgentsResponse {
  task_id: string;
  session_id: string;
  request_id: string;
  output: string;
  source: string;
  token_usage: TokenUsage;
  extra_data: ExtraData | null;
}

/** What a v3 invoke returns (API.md §3). `content` is a HitlResponse when Paused (approvals issue). */
export interface StateResponse {
  session_id: string;
  task_id: string;
  request_id: string;
  status: 'Completed' | 'Paused' | 'Failed' | 'Canceled';
  content: TealAgentsResponse | Record<string, unknown>;
}

/** A v3 stream event: `id` is `{request seq}-{n}`, monotonic per task. */
export interface TaskStreamEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}
