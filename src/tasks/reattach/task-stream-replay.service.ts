import { Injectable } from '@nestjs/common';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { Attached, parseEventId, TaskStreamAttachService } from './task-stream-attach.service';

/**
 * Reconnection of a v3 stream by `POST /sse` with `Last-Event-ID: {seq}-{n}` (the body names the
 * task): the events of request `seq` after `n`, then the rest live, exactly as `GET
 * /tasks/{task_id}/stream` with that id sends them (TaskStreamAttachService: the same events and ids on
 * every replica, `ended` (204) once the client has seen the outcome). Only the errors name this
 * route's parameters.
 */
@Injectable()
export class TaskStreamReplayService {
  constructor(private readonly attach: TaskStreamAttachService) {}

  prepare(agent: AgentDefinition, principal: Principal, taskId: string | undefined, lastEventId: string): Promise<Attached> {
    const position = parseEventId(lastEventId, 'Last-Event-ID', 'Last-Event-ID must be an event id of this API ({request seq}-{n})');
    if (!taskId) {
      const message = 'task_id is required to resume a stream with Last-Event-ID';
      throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'task_id', message }] });
    }
    return this.attach.attach(agent, principal, taskId, position);
  }
}
