import { Role, TaskState } from '@a2a-js/sdk';
import type { StreamResponse, TaskStatus } from '@a2a-js/sdk';
import { ErrorCode } from '../../common/errors/error-code';
import { dataPart, message, outputArtifact, textMessage, textPart } from './a2a-mapping.util';

/** One event of our v3 stream (docs/api.md, Streaming): its name and data. */
export interface StreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/**
 * A `HitlResponse` (the content of a Paused StateResponse) as the data part of `input-required`:
 * the pause id, the pending calls with their risk, the plan flag, and how to answer.
 */
export function pauseDataOf(hitl: Record<string, unknown>): Record<string, unknown> {
  return {
    pause_id: hitl.pause_id,
    tool_calls: hitl.tool_calls,
    plan: hitl.plan,
    autonomy_level: hitl.autonomy_level ?? null,
    expires_at: hitl.expires_at ?? null,
    approval_url: hitl.approval_url,
    rejection_url: hitl.rejection_url,
    reply_with: { decision: 'approve | reject', pause_id: hitl.pause_id, reason: '(optional)' },
  };
}

/**
 * Our v3 stream events of one request as A2A stream responses (docs/a2a.md, Streaming): text
 * deltas are appended to the `output` artifact, the outcome is the final status update
 * (`completed` after the whole answer as the artifact's last chunk, `input-required` with the pause,
 * `canceled`, or `failed` with our error code). Tool calls and results are `working` status updates
 * with the call as a data part. Stateful per stream: it knows whether a chunk was sent before.
 */
export class A2aEventMapper {
  private chunks = 0;

  constructor(private readonly ids: { contextId: string; taskId: string; metadata: Record<string, string> }) {}

  map(e: StreamEvent): StreamResponse[] {
    switch (e.event) {
      case 'partial-response':
        return this.partial(String(e.data.output_partial ?? ''));
      case 'queued':
        return [this.status(TaskState.TASK_STATE_SUBMITTED)];
      case 'tool-call':
      case 'tool-result':
        return [this.status(TaskState.TASK_STATE_WORKING, message(Role.ROLE_AGENT, [dataPart({ event: e.event, ...e.data })], this.ids))];
      case 'final-response':
        return this.final(e.data);
      case 'error':
        return [
          this.status(TaskState.TASK_STATE_FAILED, this.text(String(e.data.detail ?? e.data.title ?? 'failed'), { code: e.data.code ?? ErrorCode.INTERNAL })),
        ];
      default:
        return []; // approval-required, cancelled, approved, rejected: the final-response that follows says it
    }
  }

  private partial(text: string): StreamResponse[] {
    if (!text) return [];
    const append = this.chunks++ > 0;
    const artifact = outputArtifact(text);
    return [
      {
        payload: {
          $case: 'artifactUpdate',
          value: { taskId: this.ids.taskId, contextId: this.ids.contextId, artifact, append, lastChunk: false, metadata: undefined },
        },
      },
    ];
  }

  private final(data: Record<string, unknown>): StreamResponse[] {
    const content = (data.content ?? {}) as Record<string, unknown>;
    switch (data.status) {
      case 'Completed': {
        // The whole answer replaces the streamed pieces: a client that missed one still ends with it all.
        const artifact = outputArtifact(String(content.output ?? ''));
        const update = { taskId: this.ids.taskId, contextId: this.ids.contextId, artifact, append: false, lastChunk: true, metadata: undefined };
        return [{ payload: { $case: 'artifactUpdate', value: update } }, this.status(TaskState.TASK_STATE_COMPLETED)];
      }
      case 'Paused':
        return [
          this.status(
            TaskState.TASK_STATE_INPUT_REQUIRED,
            message(Role.ROLE_AGENT, [textPart(String(content.message)), dataPart(pauseDataOf(content))], this.ids),
          ),
        ];
      case 'Canceled':
        return [
          this.status(TaskState.TASK_STATE_CANCELED, this.text(`Canceled (${String(content.reason ?? 'canceled')})`, { reason: content.reason ?? 'canceled' })),
        ];
      default:
        return [this.status(TaskState.TASK_STATE_FAILED)];
    }
  }

  private text(text: string, metadata: Record<string, unknown>) {
    return textMessage(Role.ROLE_AGENT, text, this.ids, metadata);
  }

  status(state: TaskState, msg?: TaskStatus['message']): StreamResponse {
    const status = { state, message: msg, timestamp: new Date().toISOString() };
    return { payload: { $case: 'statusUpdate', value: { taskId: this.ids.taskId, contextId: this.ids.contextId, status, metadata: this.ids.metadata } } };
  }
}
