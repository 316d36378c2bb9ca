import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { awaitRequestOutcome } from './request-outcome';
import { ownedTask } from './task-access';
import { LoggedEvent, TaskEventLog } from './task-event-log';

const EVENT_ID = /^(\d+)-(\d+)$/;

export interface PreparedReplay {
  /** Sends what the client missed, then (while the request runs) the rest live; resolves at the end. */
  run(send: (event: string, data: Record<string, unknown>, id: string) => void, signal: AbortSignal): Promise<void>;
}

/**
 * Reconnection of a v3 stream with `Last-Event-ID: {seq}-{n}`: the events of request `seq` after
 * `n`. From this process's event log when it served the stream (exact events, then live ones);
 * otherwise from the store: the request's outcome once it has one, as one `final-response` (or
 * `cancelled` / `error`) with the next id. Ownership is checked first, before a stream opens.
 */
@Injectable()
export class TaskStreamReplay {
  constructor(
    private readonly store: StateStore,
    private readonly events: TaskEventLog,
  ) {}

  async prepare(agent: AgentDefinition, principal: Principal, taskId: string | undefined, lastEventId: string): Promise<PreparedReplay> {
    const m = EVENT_ID.exec(lastEventId.trim());
    if (!m) throw invalid('Last-Event-ID', 'Last-Event-ID must be an event id of this API ({request seq}-{n})');
    if (!taskId) throw invalid('task_id', 'task_id is required to resume a stream with Last-Event-ID');
    const seq = Number(m[1]);
    const after = Number(m[2]);
    const task = await ownedTask(this.store, agent, principal, taskId);
    const log = this.events.get(principal.tenantId, task.taskId, seq);
    if (log) {
      return {
        run: (send, signal) =>
          new Promise<void>((resolve) => {
            const forward = (e: LoggedEvent) => e.n > after && send(e.event, e.data, e.id);
            for (const e of log.events) forward(e);
            if (log.done) return resolve();
            const listener = (e: LoggedEvent | undefined) => {
              if (e) return forward(e);
              log.listeners.delete(listener);
              resolve();
            };
            log.listeners.add(listener);
            signal.addEventListener('abort', () => {
              log.listeners.delete(listener);
              resolve();
            });
          }),
      };
    }
    const request = (await this.store.listRequests(principal.tenantId, task.taskId)).find((r) => r.seq === seq);
    if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request ${seq}`);
    const ids = { task_id: task.taskId, session_id: task.sessionId, request_id: request.requestId };
    return {
      run: async (send, signal) => {
        let n = after + 1;
        const emit = (event: string, data: Record<string, unknown>) => send(event, data, `${seq}-${n++}`);
        try {
          emit('final-response', { ...(await awaitRequestOutcome(this.store, agent, principal.tenantId, ids, emit, signal)) });
        } catch (err) {
          if (signal.aborted) return;
          throw err;
        }
      },
    };
  }
}

function invalid(field: string, message: string): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field, message }] });
}
