import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { RequestRecord, TaskRecord } from '../../state/state.entities';
import { RequestWatcherService } from '../run/request-watcher.service';
import { ReplayAdmissionService } from './replay-admission.service';
import { owned } from '../writer/task-access';
import { StoredStreamFollowerService } from './stored-stream-follower.service';
import { isFinalEvent } from '../events/stream-event-writer.service';
import { hasEnded, isOutcomeOf, settled, synthesizedFinalN } from '../events/stream-outcome';
import { LoggedEvent, RequestEventLog, TaskEventLogService } from '../events/task-event-log.service';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';

const EVENT_ID = /^(\d+)-(\d+)$/;
/** How often the store is read again while a request's final event may still be on its way there. */
const GRACE_POLL_MS = 100;

/**
 * What a reattach sends: a log followed after `after` (then `release` when the stream ends: see
 * ReplayAdmissionService), or nothing: the client has seen the request's outcome (the route answers 204,
 * which stops an `EventSource` from reconnecting).
 */
export type Attached = { kind: 'stream'; log: RequestEventLog; after: number; release: () => void } | { kind: 'ended' };

/**
 * Reattaching to a request's stream, both ways a client does it: `GET /tasks/{task_id}/stream` and
 * `POST /sse` with `Last-Event-ID` (TaskStreamReplayService). With an event id `{seq}-{n}` it is request
 * `seq`'s events after `n`; without one (GET only), every event of the current request (the running
 * one, else the last). Then the rest live, until the event that ends the request's stream.
 *
 * One answer wherever the client lands (docs/api.md, Streaming: "The outcome's id, and 204"): when
 * the request has ended and the client's id is its outcome event's (or later), `ended`; otherwise a
 * stream that sends what the client missed and, in the end, the outcome, with the same ids on every
 * replica. The outcome's id is the final event the request's stream recorded (this process's log,
 * else the store's stream log); when none did (not streamed, its replica died, its writes failed),
 * the one every replica gives it (src/tasks/events/stream-outcome.ts), after every id a client can have
 * seen. So a client is never sent an empty stream to reconnect to forever, nor the outcome twice.
 *
 * When this process ran the request, its event log holds the exact events. Otherwise the store's
 * stream log is mirrored here (StoredStreamFollowerService). Ownership is checked first, before a stream
 * opens (as `GET /tasks/{id}`). A stream that follows the store (the request runs, or ran,
 * elsewhere) must be admitted first (429 TOO_MANY_STREAMS past the bounds), and concurrent ones
 * share one follower.
 */
@Injectable()
export class TaskStreamAttachService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly events: TaskEventLogService,
    private readonly watcher: RequestWatcherService,
    private readonly follower: StoredStreamFollowerService,
    private readonly admission: ReplayAdmissionService,
  ) {}

  async attach(agent: AgentDefinition, principal: Principal, taskId: string, position: { seq: number; n: number } | undefined): Promise<Attached> {
    // With no position, the running request (the lease holder) is read with the task.
    const { task, requests } = await this.reader.task(owned(agent, principal, taskId), position ? undefined : (t) => [t.lease?.requestId]);
    const seq = position?.seq ?? currentSeq(task, requests[0]);
    const after = position?.n ?? -1;
    const local = this.events.get(principal.tenantId, task.taskId, seq);
    if (local && !local.done && !local.remote) return { kind: 'stream', log: local, after, release: () => undefined }; // it runs here
    const last = local?.done ? local.events.at(-1) : undefined;
    if (last && (await this.endsHere(last, task))) {
      // It ended here (ran, or followed): this log holds its exact events, and its outcome last.
      return after >= last.n ? { kind: 'ended' } : { kind: 'stream', log: local!, after, release: () => undefined };
    }
    const release = this.admission.admit(principal);
    try {
      if (local && !local.done) return { kind: 'stream', log: local, after, release }; // followed here already
      const followed = await this.followStore(agent, task, seq, after);
      if (followed.kind === 'ended') release();
      return followed.kind === 'ended' ? followed : { ...followed, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Whether the final event a log here ended with is still the request's outcome (a pause may have been decided since, elsewhere). */
  private async endsHere(last: LoggedEvent, task: TaskRecord): Promise<boolean> {
    if (!isFinalEvent(last.event)) return false;
    if (last.event !== 'final-response' || last.data.status !== 'Paused') return true;
    const record = await this.reader.request(task, String(last.data.request_id));
    return record !== undefined && isOutcomeOf(last, record);
  }

  /** A request run elsewhere (or before this process): its stored stream log mirrored here, and its outcome. */
  private async followStore(
    agent: AgentDefinition,
    task: TaskRecord,
    seq: number,
    after: number,
  ): Promise<{ kind: 'ended' } | { kind: 'stream'; log: RequestEventLog; after: number }> {
    const request = await this.reader.requestAt(task, seq);
    const watched = { tenantId: task.tenantId, taskId: task.taskId, requestId: request.requestId };
    const read = () => this.reader.streamEvents(task, seq, -1);
    const first = await read();
    let stored = first ?? [];
    if (hasEnded(request)) {
      for (;;) {
        const last = stored.at(-1);
        if (last && isFinalEvent(last.event) && isOutcomeOf(last, request)) {
          if (after >= last.n) return { kind: 'ended' };
          break;
        }
        if (first === undefined || settled(request, this.writer.now())) {
          if (after >= synthesizedFinalN(request, last?.n ?? -1)) return { kind: 'ended' };
          break;
        }
        // Its final event may still be on its way to the store.
        await sleep(GRACE_POLL_MS);
        stored = (await read()) ?? [];
      }
    }
    // A store that keeps no stream log: the outcome from the record, once there is one.
    if (first === undefined) return { kind: 'stream', log: this.watcher.mirror(agent, watched, seq, after + 1), after };
    return { kind: 'stream', log: this.follower.open(agent, watched, seq, stored), after };
  }
}

/** The running request's seq (`running`: the lease holder, when there is one), else the last request's. */
function currentSeq(task: TaskRecord, running: RequestRecord | undefined): number {
  if (running) return running.seq;
  if (task.requestCount === 0) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Task ${task.taskId} has no request`);
  return task.requestCount - 1;
}

/**
 * `{request seq}-{n}`, else 422 naming `field` (GET: `last_event_id`, the header and the query being
 * one parameter; POST /sse: `Last-Event-ID`).
 */
export function parseEventId(
  value: string,
  field = 'last_event_id',
  message = 'last_event_id (or the Last-Event-ID header) must be an event id of this API ({request seq}-{n})',
): { seq: number; n: number } {
  const m = EVENT_ID.exec(value.trim());
  const seq = Number(m?.[1]);
  const n = Number(m?.[2]);
  if (!m || !Number.isSafeInteger(seq) || !Number.isSafeInteger(n)) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field, message }] });
  }
  return { seq, n };
}
