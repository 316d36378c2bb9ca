import { Role, TaskState } from '@a2a-js/sdk';
import type { Artifact, Message, Part, Task, TaskStatus } from '@a2a-js/sdk';
import { newUuid } from '../../common/ids/uuid.util';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { RequestRecord, RequestStatus, StoredItem } from '../../state/state.entities';
import type { ResumeDecision } from '../../tasks/lifecycle/decide';
import { approvalUrls, pendingCallsView } from '../../tasks/views/request-response';

/**
 * The A2A vocabulary over ours (docs/a2a.md, Mapping), as pure functions: an A2A `contextId` is our
 * task (the conversation), an A2A task is one of its requests (`id` = our `request_id`), parts are
 * our items, and a pause for approval is `input-required` with the pause as a data part.
 */

/** The artifact every answer is streamed into and stored as (one per A2A task). */
export const OUTPUT_ARTIFACT_ID = 'output';

/** Image media types an item may carry (docs/api.md, Input limits). */
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

const STATES: Record<RequestStatus, TaskState> = {
  Queued: TaskState.TASK_STATE_SUBMITTED,
  Running: TaskState.TASK_STATE_WORKING,
  Paused: TaskState.TASK_STATE_INPUT_REQUIRED,
  Completed: TaskState.TASK_STATE_COMPLETED,
  Canceled: TaskState.TASK_STATE_CANCELED,
  Failed: TaskState.TASK_STATE_FAILED,
};

/** The A2A state of a request in `status`. */
export function stateOf(status: RequestStatus): TaskState {
  return STATES[status];
}

function invalid(field: string, message: string): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, `${field}: ${message}`, { errors: [{ field, message }] });
}

/**
 * A message's parts as our items: text parts as text; image files (inline bytes, or a `data:` URL)
 * as image items; data parts as their JSON text. A file we cannot read (another media type, an
 * http URL: the server fetches nothing) is 422 naming the part.
 */
export function itemsOf(parts: Part[]): StoredItem[] {
  const items = parts.map((part, i): StoredItem => {
    const field = `message.parts.${i}`;
    const content = part.content;
    switch (content?.$case) {
      case 'text':
        return { content_type: 'text', content: content.value };
      case 'data':
        return { content_type: 'text', content: JSON.stringify(content.value ?? null) };
      case 'raw': {
        if (!IMAGE_TYPES.has(part.mediaType)) throw invalid(field, `a file of media type ${part.mediaType || '(none)'} is not accepted (images only)`);
        return { content_type: 'image', content: `data:${part.mediaType};base64,${Buffer.from(content.value).toString('base64')}` };
      }
      case 'url':
        if (!content.value.startsWith('data:image/')) throw invalid(field, 'a file by URL must be a data: URL of an image (the server fetches nothing)');
        return { content_type: 'image', content: content.value };
      default:
        throw invalid(field, 'a part needs text, raw, url or data');
    }
  });
  if (!items.length) throw invalid('message.parts', 'at least one part is required');
  return items;
}

/**
 * The decision a reply to an `input-required` task carries: a data part
 * `{decision: "approve" | "reject", pause_id, reason?}`; undefined when none of its parts is one.
 */
export function decisionOf(parts: Part[]): ResumeDecision | undefined {
  for (const [i, part] of parts.entries()) {
    if (part.content?.$case !== 'data') continue;
    const value = part.content.value as Record<string, unknown> | null;
    if (!value || typeof value !== 'object' || !('decision' in value)) continue;
    const field = `message.parts.${i}.data`;
    if (value.decision !== 'approve' && value.decision !== 'reject') throw invalid(`${field}.decision`, 'must be "approve" or "reject"');
    if (typeof value.pause_id !== 'string' || !value.pause_id) throw invalid(`${field}.pause_id`, 'the pause_id of the input-required status is required');
    if (value.reason !== undefined && typeof value.reason !== 'string') throw invalid(`${field}.reason`, 'must be a string');
    return { action: value.decision, pause_id: value.pause_id, ...(value.reason ? { reason: value.reason } : {}) };
  }
  return undefined;
}

/** A message with one text part. */
export function textMessage(role: Role, text: string, ids: { contextId: string; taskId: string }, metadata?: Record<string, unknown>): Message {
  return message(role, [textPart(text)], ids, metadata);
}

export function message(role: Role, parts: Part[], ids: { contextId: string; taskId: string }, metadata?: Record<string, unknown>): Message {
  return { messageId: newUuid(), contextId: ids.contextId, taskId: ids.taskId, role, parts, metadata, extensions: [], referenceTaskIds: [] };
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

export function dataPart(value: Record<string, unknown>): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

/** The answer's artifact (the whole text, or one streamed piece of it). */
export function outputArtifact(text: string): Artifact {
  return { artifactId: OUTPUT_ARTIFACT_ID, name: 'output', description: "The agent's answer", parts: [textPart(text)], metadata: undefined, extensions: [] };
}

/** Our ids, carried in every task's and event's `metadata` (the session id travels only here). */
export function idsMetadata(r: Pick<RequestRecord, 'taskId' | 'sessionId' | 'requestId'>): Record<string, string> {
  return { task_id: r.taskId, session_id: r.sessionId, request_id: r.requestId };
}

/**
 * What a paused request waits for, as the data part of its `input-required` status: the pause id,
 * the pending calls (each with its risk and why it needs approval), the plan flag, and how to answer.
 */
export function pauseData(agent: Pick<AgentDefinition, 'prefix'>, record: Pick<RequestRecord, 'requestId' | 'pendingApprovals'>): Record<string, unknown> {
  const p = record.pendingApprovals!;
  return {
    pause_id: p.pauseId,
    tool_calls: pendingCallsView(p),
    plan: p.plan,
    autonomy_level: p.autonomyLevel ?? null,
    expires_at: p.expiresAt ?? null,
    ...approvalUrls(agent, record.requestId, p.pauseId),
    reply_with: { decision: 'approve | reject', pause_id: p.pauseId, reason: '(optional)' },
  };
}

/** The status of a stored request (its message tells what a client must know to go on). */
export function statusOf(agent: Pick<AgentDefinition, 'prefix'>, record: RequestRecord, timestamp = record.updatedAt): TaskStatus {
  const ids = { contextId: record.taskId, taskId: record.requestId };
  const state = stateOf(record.status);
  let msg: Message | undefined;
  if (record.status === 'Paused' && record.pendingApprovals) {
    msg = message(Role.ROLE_AGENT, [textPart('Human intervention required.'), dataPart(pauseData(agent, record))], ids);
  } else if (record.status === 'Failed') {
    msg = textMessage(Role.ROLE_AGENT, record.error?.message ?? 'The request failed', ids, { code: record.error?.code ?? ErrorCode.INTERNAL });
  } else if (record.status === 'Canceled') {
    msg = textMessage(Role.ROLE_AGENT, `Canceled (${record.reason ?? 'canceled'})`, ids, { reason: record.reason ?? 'canceled' });
  }
  return { state, message: msg, timestamp };
}

/**
 * A stored request as an A2A task: its user turn and final answer as `history` (the last
 * `historyLength`, when given), its answer as the `output` artifact.
 */
export function taskOf(agent: Pick<AgentDefinition, 'prefix'>, record: RequestRecord, historyLength?: number): Task {
  const ids = { contextId: record.taskId, taskId: record.requestId };
  const history: Message[] = [];
  for (const m of record.messages) {
    if (m.role === 'user') history.push(message(Role.ROLE_USER, m.items.map(partOfItem), ids));
    else if (m.role === 'assistant' && m.content && !m.tool_calls?.length) history.push(textMessage(Role.ROLE_AGENT, m.content, ids));
  }
  return {
    id: record.requestId,
    contextId: record.taskId,
    status: statusOf(agent, record),
    artifacts: record.status === 'Completed' ? [outputArtifact(record.output ?? '')] : [],
    history: historyLength === undefined ? history : historyLength <= 0 ? [] : history.slice(-historyLength),
    metadata: idsMetadata(record),
  };
}

/** One of our items as a part (an image item is a `data:` URL file part). */
export function partOfItem(item: StoredItem): Part {
  if (item.content_type === 'text') return textPart(item.content);
  const mediaType = /^data:([^;,]+)/.exec(item.content)?.[1] ?? 'image/png';
  return { content: { $case: 'url', value: item.content }, metadata: undefined, filename: '', mediaType };
}
