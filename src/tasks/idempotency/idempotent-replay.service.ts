import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { IdempotencyEntry, RequestRecord, TaskRecord } from '../../state/state.entities';
import { hasEnded } from '../events/stream-outcome';
import { TaskEventLogService } from '../events/task-event-log.service';
import { TaskStreamAttachService } from '../reattach/task-stream-attach.service';
import { RequestWatcherService, WatchedRequest } from '../run/request-watcher.service';
import { RunningRequestsService } from '../run/running-requests.service';
import type { StartedRequest } from '../run/started-request';
import { idsOf, responseOf } from '../views/request-response';
import { owned } from '../writer/task-access';
import { TaskReaderService } from '../writer/task-reader.service';

/** A wait that found the request neither ended nor running here looks again after this long. */
const RECHECK_MS = 250;

/**
 * What a repeated POST answers (IdempotencyService): the request its first copy started or
 * decided, as a StartedRequest that runs nothing. `run` answers the request's outcome, waiting for
 * it while it runs (here or on another replica), so every copy gets the first one's answer;
 * `stream` replays its stream from the first event and follows it live (the reattach's path: this
 * replica's log, else the store's stream log, else the outcome from the record). A queued request
 * answers 202 as the first copy did.
 */
@Injectable()
export class IdempotentReplayService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly watcher: RequestWatcherService,
    private readonly running: RunningRequestsService,
    private readonly attach: TaskStreamAttachService,
    private readonly events: TaskEventLogService,
  ) {}

  async started(agent: AgentDefinition, principal: Principal, entry: IdempotencyEntry): Promise<StartedRequest> {
    const { task } = await this.reader.task(owned(agent, principal, entry.taskId));
    const record = entry.requestId === undefined ? undefined : await this.reader.request(task, entry.requestId);
    if (!record) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `The request this Idempotency-Key started no longer exists`);
    const watched: WatchedRequest = { tenantId: task.tenantId, taskId: task.taskId, requestId: record.requestId };
    return {
      ids: idsOf(record),
      queued: record.status === 'Queued',
      replayed: record,
      run: async () => (record.status === 'Queued' ? undefined : responseOf(agent, await this.settled(agent, task, watched))),
      stream: async () => {
        const attached = await this.attach.attach(agent, principal, task.taskId, { seq: record.seq, n: -1 });
        if (attached.kind === 'ended') throw new DomainError(ErrorCode.INTERNAL, `Request ${record.requestId} has no stream to replay`);
        // The reattach's admission is held for as long as the log is followed.
        void this.events.follow(attached.log, attached.after, () => undefined, new AbortController().signal).finally(attached.release);
        return { log: attached.log, after: attached.after };
      },
    };
  }

  /** The request once it has ended (or paused): waited for on this replica's run, else watched in the store. */
  private async settled(agent: AgentDefinition, task: TaskRecord, watched: WatchedRequest): Promise<RequestRecord> {
    for (;;) {
      const here = this.running.settledHere(watched.requestId);
      if (here) await here.catch(() => undefined);
      else await this.watcher.watch(agent, watched);
      const record = await this.reader.request(task, watched.requestId);
      if (!record) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${watched.requestId} no longer exists`);
      if (hasEnded(record)) return record;
      // It started running here between the watch and the read (or the watch was cut short): again.
      if (!here) await sleep(RECHECK_MS);
    }
  }
}
