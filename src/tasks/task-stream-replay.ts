import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../agents/config/agent-definition';
import type { Principal } from '../auth/principal';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { RequestWatcher } from './request-watcher.service';
import { ReplayAdmission } from './replay-admission';
import { owned } from './stateful-invoker.service';
import { RequestEventLog, TaskEventLog } from './task-event-log';
import { TaskWriter } from './task-writer';

const EVENT_ID = /^(\d+)-(\d+)$/;

/**
 * Reconnection of a v3 stream with `Last-Event-ID: {seq}-{n}`: the events of request `seq` after
 * `n`, from the event log. When this process ran or watched the request, its log holds the exact
 * events (then the rest live); otherwise a log is started here that the RequestWatcher fills with
 * the request's outcome from the store once it has one (as a live stream sends it, with ids after
 * `n`). Ownership is checked first, before a stream opens; a replay that waits on the store must be
 * admitted (ReplayAdmission: 429 TOO_MANY_STREAMS past the bounds), `release` when its stream ends.
 */
@Injectable()
export class TaskStreamReplay {
  constructor(
    private readonly store: StateStore,
    private readonly writer: TaskWriter,
    private readonly events: TaskEventLog,
    private readonly watcher: RequestWatcher,
    private readonly admission: ReplayAdmission,
  ) {}

  async prepare(agent: AgentDefinition, principal: Principal, taskId: string | undefined, lastEventId: string): Promise<{ log: RequestEventLog; after: number; release: () => void }> {
    const m = EVENT_ID.exec(lastEventId.trim());
    if (!m) throw invalid('Last-Event-ID', 'Last-Event-ID must be an event id of this API ({request seq}-{n})');
    if (!taskId) throw invalid('task_id', 'task_id is required to resume a stream with Last-Event-ID');
    const seq = Number(m[1]);
    const after = Number(m[2]);
    const task = await this.writer.read(owned(agent, principal, taskId));
    const local = this.events.get(principal.tenantId, task.taskId, seq);
    if (local && (!local.remote || local.done)) return { log: local, after, release: () => undefined };
    const release = this.admission.admit(principal);
    try {
      if (local) return { log: local, after, release };
      const request = (await this.store.listRequests(principal.tenantId, task.taskId)).find((r) => r.seq === seq);
      if (!request) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request ${seq}`);
      const log = this.watcher.mirror(agent, { tenantId: principal.tenantId, taskId: task.taskId, requestId: request.requestId }, seq, after + 1);
      return { log, after, release };
    } catch (err) {
      release();
      throw err;
    }
  }
}

function invalid(field: string, message: string): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field, message }] });
}
