/**
 * What the stateful (v3) API stores. A Task is one conversation owned by one identity; each
 * invocation of it is a Request. A Session only groups an owner's tasks: it has no record of its
 * own, and its key includes the owner, so another user reusing a session id gets a separate one.
 */

export type TaskStatus = 'Running' | 'Paused' | 'Completed' | 'Failed' | 'Canceled';
/** A request may also wait for its turn (`on_busy: enqueue`). */
export type RequestStatus = TaskStatus | 'Queued';

/**
 * A claimed `Idempotency-Key` (StateStore.getIdempotencyEntry; src/tasks/idempotency/): what the
 * POST that first carried it wrote, so that a retry answers what it answered instead of running again.
 */
export interface IdempotencyEntry {
  /** Its id within the tenant: a digest of the owner, the agent and the client's key (never the key itself). */
  key: string;
  /** A digest of the route and body it was first used with: another body under the key is refused. */
  fingerprint: string;
  /** What the POST did (`turn`, `resume`, `cancel`, `edit`, `fork`, `delete`). */
  operation: string;
  /** The task it wrote (a fork: the task it created). */
  taskId: string;
  /** The request it started or decided, when there is one. */
  requestId?: string;
  /** Epoch ms, the store's clock. */
  createdAt: number;
  /** Epoch ms, the store's clock: from then on the key is forgotten. */
  expiresAt: number;
}

/** The caller: Entra tenant (`tid`) and object id (`oid`). */
export interface Principal {
  tenantId: string;
  ownerId: string;
}

export interface StoredItem {
  content_type: 'text' | 'image';
  content: string;
}

export interface StoredToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * One message of the model conversation, as the model saw or produced it. `id` is unique and
 * stable; messages are only ever appended.
 */
export type StoredMessage =
  | { id: string; role: 'user'; items: StoredItem[]; created_at: string }
  | { id: string; role: 'assistant'; content: string | null; tool_calls?: StoredToolCall[]; created_at: string }
  | { id: string; role: 'tool'; tool_call_id: string; content: string; is_error?: boolean; created_at: string };

/** The execution trace of one tool call (issue 5 fills it in). */
export interface ToolCallTrace {
  id: string;
  name: string;
  arguments: string;
  started_at: string;
  duration_ms?: number;
  outcome?: 'ok' | 'error' | 'rejected' | 'canceled';
  result?: string;
  /** What the call added to the answer's `extra_data` (upstream's ExtraData items), when anything. */
  extra_data?: { key: string; value: string }[];
}

/** One model call of a request (the audit archive's `model_call`): which model, when, how long, what it cost. */
export interface ModelCallTrace {
  model: string;
  started_at: string;
  duration_ms: number;
  usage: StoredUsage;
  finish_reason?: string;
}

/** Why a pending call needs a human: its own policy, the agent's autonomy level, or being part of a plan. */
export type ApprovalReason = 'requires_hitl' | 'autonomy_level' | 'plan' | 'client_tool';

/** A call of a paused turn, with what governance said of it (risk and, when pending, why). */
export interface PausedToolCall extends StoredToolCall {
  risk?: string;
  approvalReason?: ApprovalReason;
}

/** The model turn a Paused request waits on. Its assistant message is the last of `messages`. */
export interface PendingApprovals {
  /** Identifies this pause: a decision names the pause it decided, so a stale retry cannot decide a later one. */
  pauseId: string;
  /** Every call of the turn, in order. */
  calls: PausedToolCall[];
  /** Ids of the calls a human must decide on (the others need no approval and run with the approved ones). */
  pending: string[];
  /** The turn is one plan (plan_threshold): approved or rejected as a whole. */
  plan: boolean;
  requestedAt: string;
  /** The agent's autonomy level when it paused (shown with the pending calls). */
  autonomyLevel?: string;
  /** ISO time after which the pause is Canceled as `expired` (`spec.governance.approval_ttl_seconds`). */
  expiresAt?: string;
}

/**
 * One decision on a pause (`POST .../resume/{request_id}`), or its refinement (`refine`: a new
 * message sent while it waited, with `spec.governance.on_paused: refine`; `reason` is its text).
 */
export interface ApprovalDecision {
  pauseId: string;
  action: 'approve' | 'reject' | 'refine';
  approved: string[];
  rejected: string[];
  /** The deciding identity's object id (always the owner: others are refused). */
  decidedBy: string;
  decidedAt: string;
  /** The reason given with the decision (shown to the model with each call it rejected). */
  reason?: string;
  /** Per-call reasons (`decisions[].reason`), by tool call id. */
  reasons?: Record<string, string>;
}

export interface StoredUsage {
  completion_tokens: number;
  prompt_tokens: number;
  total_tokens: number;
}

export interface RequestRecord {
  requestId: string;
  taskId: string;
  sessionId: string;
  tenantId: string;
  ownerId: string;
  /** 0-based position of this request in its task. */
  seq: number;
  status: RequestStatus;
  /** The user message that started it (and the user context it came with). */
  messages: StoredMessage[];
  userContext?: Record<string, string>;
  toolCalls: ToolCallTrace[];
  /** Every model call of the request, in order (records stored before the archive have none). */
  modelCalls?: ModelCallTrace[];
  tokenUsage: StoredUsage;
  /** Final text output when Completed. */
  output?: string;
  error?: { code: string; message: string };
  /** While Paused: the model turn whose calls wait for a human decision (src/tasks/approvals.ts). */
  pendingApprovals?: PendingApprovals;
  /** Every pause of this request, in order, the current one last while Paused (the audit trail's plans; never removed). */
  pauses?: PendingApprovals[];
  /** Every decision taken on this request's pauses, in order (the audit trail; never removed). */
  approvals?: ApprovalDecision[];
  /** Why a request did not complete (see RequestEndReason). */
  reason?: RequestEndReason;
  /** What the model received of the task's history (`spec.agent.history`, context-length retry). */
  modelInput?: ModelInputRecord;
  /** The summary of the left-out turns this request wrote (`strategy: summarize`); later requests reuse it. */
  historySummary?: HistorySummaryRecord;
  /**
   * Set on a request that edits an earlier user turn (`POST .../requests/{id}/edit`): the edited
   * request and its `seq`. Every request from that `seq` up to this one is superseded by it
   * (src/tasks/lifecycle/edit.ts derives `superseded_by`; the stored records are left as they were).
   */
  edits?: { requestId: string; seq: number };
  createdAt: string;
  updatedAt: string;
  /** The request's own `webhook_url` (checked against the agent's `allow_request_urls` when it came). */
  webhookUrl?: string;
}

/** What the model received of the history on a request's first model call (src/invocation/history-run.ts). */
export interface ModelInputRecord {
  /** Messages sent, system prompt and user context included. */
  messages: number;
  /** History messages left out. */
  omittedMessages: number;
  /** Some of the history was left out (by the configured limits, or retrying after "context length exceeded"). */
  truncated: boolean;
  /** The left-out turns were replaced by a summary. */
  summarized: boolean;
}

/** A summary of the oldest history messages of a task (src/tasks/run/task-window.ts). */
export interface HistorySummaryRecord {
  text: string;
  /** How many history messages (after the user context) it stands for: whole turns, oldest first. */
  covers: number;
  /** sha256 of those messages: the summary is reused only for exactly the messages it summarized. */
  digest: string;
}

/**
 * Why a request ended without completing: `superseded` (a newer queued follow-on replaced it),
 * `canceled` (by its owner), `abandoned` (its process died), `rejected` (every pending call was
 * rejected), `expired` (its pause outlived `approval_ttl_seconds`), `shutdown` (still running when its
 * replica's shutdown grace ended: TA_SHUTDOWN_GRACE_MS), `failed` (any other error).
 */
export type RequestEndReason = 'superseded' | 'canceled' | 'abandoned' | 'rejected' | 'expired' | 'shutdown' | 'failed';

/**
 * One event of a task waiting in its outbox for delivery to one receiver (src/tasks/webhooks/).
 * The payload is built from the request record when it is sent, so the outbox stays small.
 */
export interface WebhookDelivery {
  /** The Standard Webhooks `webhook-id`: the same on every attempt, so a receiver drops repeats. */
  id: string;
  /** `request.completed`, `request.failed`, `request.canceled`, `approval.required`, `approval.expired`. */
  event: string;
  /** The request the event is about. */
  requestId: string;
  /** The pause (approval events). */
  pauseId?: string;
  /** Where it goes: an agent's `spec.webhooks[].url` or the request's `webhook_url`. */
  url: string;
  /** The variable whose secret signs it (`secret_env`): never the secret. */
  secretEnv: string;
  /** When the event happened (epoch ms, the store's clock): retries stop TA_WEBHOOK_RETRY_HOURS after it. */
  createdAt: number;
  /** Attempts made so far (since the last redelivery). */
  attempts: number;
  /** An admin's redelivery (epoch ms): the retry window starts here instead of at `createdAt`. */
  retryFrom?: number;
  /**
   * When the next attempt is due (epoch ms, the store's clock). While an attempt is under way it is
   * the end of that attempt's claim, so a replica that died mid-attempt leaves it due again.
   */
  dueAt: number;
  /** After the last attempt failed: kept, to be listed and redelivered, never retried on its own. */
  dead?: boolean;
  /** When it was delivered (a 2xx): kept a while, for the task's view, and never sent again. */
  deliveredAt?: number;
  /** The last attempt: when, the receiver's status (if it answered) and what went wrong. */
  lastAttemptAt?: number;
  lastStatus?: number;
  lastError?: string;
}

/** Held by the request that is running; a dead process's lease simply expires. */
export interface TaskLease {
  requestId: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

export interface TaskRecord {
  taskId: string;
  sessionId: string;
  tenantId: string;
  ownerId: string;
  /** `"{name}:{version}"` of the agent that owns the task. */
  agent: string;
  status: TaskStatus;
  /** Set by the store on every successful commit: 1 after create, +1 per commit. */
  version: number;
  /** Number of requests (their `seq` runs from 0 to requestCount - 1). */
  requestCount: number;
  lease?: TaskLease;
  /** The follow-on waiting for the running request to end (`on_busy: enqueue`; at most one). */
  queued?: string;
  /** Set by a cancel that reached a process other than the one running the request. */
  cancelRequested?: string;
  /** Last SSE event id issued for this task (monotonic). */
  lastEventSeq: number;
  metadata: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  /** ISO time after which the task reads as missing (stores may also delete it). */
  expiresAt?: string;
  /** While Paused with an approval TTL: epoch ms when the pause expires (checked on the next read or write). */
  pauseExpiresAt?: number;
  /** Set when its deletion began: the store then hides the task from every read (state-store.ts). */
  deletingAt?: string;
  /**
   * The task's webhook outbox (src/tasks/webhooks/; docs/webhooks.md): the deliveries of events its
   * commits reported, written by the same commits, until each is delivered (then removed) or dead.
   * Absent when the agent has no webhooks. It puts the task in the lease index (`wakeAt`).
   */
  outbox?: WebhookDelivery[];
  /**
   * Unique per write (src/tasks/writer/task-writer.service.ts): after a write whose answer was lost (a timeout
   * on a write the store did apply), reading this back tells whether it was applied.
   */
  writeId?: string;
}
