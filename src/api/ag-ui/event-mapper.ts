import { BaseEvent, EventType, RunFinishedOutcome } from '@ag-ui/core';
import { newUuid } from '../../common/ids/uuid.util';
import type { LoggedEvent } from '../../tasks/events/task-event-log.service';
import { interruptsOf, pendingApprovalsOf, PauseView } from './interrupts';

export interface RunIds {
  threadId: string;
  runId: string;
  task_id: string;
  session_id: string;
  request_id: string;
}

/**
 * Turns the v3 events of one request (its event log: src/tasks/events/task-event-log.service.ts) into AG-UI
 * events, in order: text deltas as TEXT_MESSAGE_START/CONTENT/END (a new message per model turn),
 * each server tool call as TOOL_CALL_START/ARGS/END then TOOL_CALL_RESULT, the outcome as
 * STATE_SNAPSHOT then RUN_FINISHED (success, an interrupt outcome for a pause, cancelled), a
 * failure as RUN_ERROR with our error code. The terminal event is held in `terminal` so the caller
 * may add events (MESSAGES_SNAPSHOT) before it. `announced`: the calls an earlier run already
 * sent (the pending calls of the pause a resume decides): only their results are sent;
 * `answered`: client-side tool calls whose results the client sent (nothing of them is sent).
 * A pause on client-side tool calls (reason `client_tool`) is no interrupt: the run finishes with
 * `outcome: {type: "success", pendingToolCallIds}` and the client's next run brings the results.
 */
export class AgUiEventMapper {
  terminal?: BaseEvent;
  private text?: string;
  /** The assistant message of the current model turn (its text, if any): the parent of its tool calls. */
  private turnMessageId?: string;
  /** Text was streamed since the last tool result (else the final answer is sent whole). */
  private streamedText = false;
  private readonly announced: Set<string>;
  private readonly answered: Set<string>;

  constructor(
    private readonly ids: RunIds,
    calls: { announced?: string[]; answered?: string[] } = {},
  ) {
    this.announced = new Set(calls.announced);
    this.answered = new Set(calls.answered);
  }

  get metadata() {
    return { task_id: this.ids.task_id, session_id: this.ids.session_id, request_id: this.ids.request_id };
  }

  started(): BaseEvent {
    return { type: EventType.RUN_STARTED, threadId: this.ids.threadId, runId: this.ids.runId, metadata: this.metadata } as BaseEvent;
  }

  map(e: LoggedEvent): BaseEvent[] {
    const d = e.data;
    switch (e.event) {
      case 'partial-response':
        return this.textDelta(String(d.output_partial ?? ''));
      case 'tool-call':
        return [...this.endText(), ...this.toolCall(String(d.tool_call_id), String(d.name), String(d.arguments ?? ''))];
      case 'tool-result':
        this.turnMessageId = undefined;
        this.streamedText = false;
        if (this.answered.has(String(d.tool_call_id))) return this.endText();
        return [
          ...this.endText(),
          {
            type: EventType.TOOL_CALL_RESULT,
            messageId: newUuid(),
            toolCallId: String(d.tool_call_id),
            content: String(d.result ?? ''),
            role: 'tool',
          } as BaseEvent,
        ];
      case 'approval-required': {
        const pause = d as unknown as PauseView;
        const calls = pause.tool_calls.flatMap((c) => this.toolCall(c.id, c.name, c.arguments));
        if (pause.tool_calls.every((c) => c.approval_reason === 'client_tool')) {
          const pendingToolCallIds = pause.tool_calls.map((c) => c.id);
          this.terminal = this.finished({ type: 'success', pendingToolCallIds });
          return [...this.endText(), ...calls, this.snapshot('Paused', [], pendingToolCallIds)];
        }
        this.terminal = this.finished({ type: 'interrupt', interrupts: interruptsOf(pause) });
        return [...this.endText(), ...calls, this.snapshot('Paused', pendingApprovalsOf(pause))];
      }
      case 'final-response':
        return this.final(d);
      case 'error':
        this.terminal = {
          type: EventType.RUN_ERROR,
          message: String(d.detail ?? d.title ?? 'The run failed'),
          code: String(d.code ?? 'INTERNAL'),
          metadata: this.metadata,
        } as BaseEvent;
        return this.endText();
      default:
        // queued, approved, rejected, cancelled: the outcome says it.
        return [];
    }
  }

  /** The terminal event for a run whose log closed without an outcome (the run was lost). */
  lost(): BaseEvent {
    return { type: EventType.RUN_ERROR, message: 'The run ended without an outcome', code: 'INTERNAL', metadata: this.metadata } as BaseEvent;
  }

  private final(d: Record<string, unknown>): BaseEvent[] {
    const status = String(d.status);
    if (status === 'Paused') return []; // approval-required came first
    const out: BaseEvent[] = [];
    const content = (d.content ?? {}) as { output?: unknown; reason?: unknown };
    if (status === 'Completed' && !this.streamedText && typeof content.output === 'string' && content.output) out.push(...this.textDelta(content.output));
    out.push(...this.endText(), this.snapshot(status, []));
    this.terminal = status === 'Canceled' ? this.finished({ type: 'cancelled' }) : this.finished({ type: 'success' }, content.output);
    return out;
  }

  private textDelta(delta: string): BaseEvent[] {
    if (!delta) return [];
    const out: BaseEvent[] = [];
    if (!this.text) {
      this.text = newUuid();
      this.turnMessageId = this.text;
      out.push({ type: EventType.TEXT_MESSAGE_START, messageId: this.text, role: 'assistant' } as BaseEvent);
    }
    this.streamedText = true;
    out.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: this.text, delta } as BaseEvent);
    return out;
  }

  private endText(): BaseEvent[] {
    if (!this.text) return [];
    const id = this.text;
    this.text = undefined;
    return [{ type: EventType.TEXT_MESSAGE_END, messageId: id } as BaseEvent];
  }

  private toolCall(id: string, name: string, args: string): BaseEvent[] {
    if (this.announced.has(id)) return [];
    this.announced.add(id);
    return [
      {
        type: EventType.TOOL_CALL_START,
        toolCallId: id,
        toolCallName: name,
        ...(this.turnMessageId ? { parentMessageId: this.turnMessageId } : {}),
      } as BaseEvent,
      ...(args ? [{ type: EventType.TOOL_CALL_ARGS, toolCallId: id, delta: args } as BaseEvent] : []),
      { type: EventType.TOOL_CALL_END, toolCallId: id } as BaseEvent,
    ];
  }

  /** The task's status, the approvals it waits for, and the client-side tool calls whose results it waits for. */
  private snapshot(status: string, pending: unknown[], pendingToolCallIds: string[] = []): BaseEvent {
    return {
      type: EventType.STATE_SNAPSHOT,
      snapshot: { ...this.metadata, status, pending_approvals: pending, pending_tool_call_ids: pendingToolCallIds },
    } as BaseEvent;
  }

  private finished(outcome: RunFinishedOutcome, result?: unknown): BaseEvent {
    return {
      type: EventType.RUN_FINISHED,
      threadId: this.ids.threadId,
      runId: this.ids.runId,
      ...(result !== undefined ? { result } : {}),
      outcome,
      metadata: this.metadata,
    } as BaseEvent;
  }
}
