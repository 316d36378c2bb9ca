import { Role, TaskState } from '@a2a-js/sdk';
import type { Message, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import { Injectable } from '@nestjs/common';
import { newUuid } from '../../common/ids/uuid.util';
import { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { InvokeResponse } from '../../invocation/invoke-response';
import { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import { parseStatelessInput } from '../common/parse-stateless-input';
import { A2aEventMapper } from './a2a-events.util';
import { itemsOf, message, outputArtifact } from './a2a-mapping.util';
import type { A2aCall } from './a2a-tasks.service';
import { AsyncQueue } from './async-queue.util';

/**
 * The A2A operations of a stateless (skagents v1, v2alpha1) agent: a message is one invocation of
 * that message alone (a custom input type takes a data part as its body), answered as a completed
 * task in a fresh context (docs/a2a.md). Nothing is stored, so there is nothing to get, cancel or
 * resubscribe to: those are TaskNotFound.
 */
@Injectable()
export class A2aStatelessService {
  constructor(private readonly invoker: StatelessInvokerService) {}

  async send(agent: AgentDefinition, principal: Principal, params: SendMessageRequest, call: A2aCall): Promise<Task> {
    const msg = required(params.message);
    const response = await this.invoker.invoke(agent, inputOf(agent, msg), { signal: call.signal, caller: { principal, bearerToken: call.bearerToken } });
    return completed(msg, response);
  }

  async *stream(agent: AgentDefinition, principal: Principal, params: SendMessageRequest, call: A2aCall): AsyncGenerator<StreamResponse> {
    const msg = required(params.message);
    const input = inputOf(agent, msg);
    const ids = { contextId: newUuid(), taskId: '', metadata: {} as Record<string, string> };
    const queue = new AsyncQueue<StreamResponse>();
    let mapper: A2aEventMapper | undefined;
    const run = this.invoker.invoke(agent, input, {
      signal: call.signal,
      caller: { principal, bearerToken: call.bearerToken },
      emit: (e) => {
        if (e.event !== 'partial-response') return;
        ids.taskId ||= e.data.request_id;
        mapper ??= this.opened(queue, msg, ids);
        queue.push(...mapper.map({ event: e.event, data: { ...e.data } }));
      },
    });
    run.then(
      (response) => {
        ids.taskId ||= response.request_id;
        Object.assign(ids.metadata, metaOf(response));
        mapper ??= this.opened(queue, msg, ids);
        queue.push(...mapper.map({ event: 'final-response', data: { status: 'Completed', content: { output: response.output_raw ?? '' } } }));
        queue.end();
      },
      (err: unknown) => queue.end(err),
    );
    yield* queue;
  }

  /** The task, first on the stream (its id is the invocation's request id, known with the first event). */
  private opened(queue: AsyncQueue<StreamResponse>, msg: Message, ids: { contextId: string; taskId: string; metadata: Record<string, string> }) {
    const history = [message(Role.ROLE_USER, msg.parts, ids)];
    const status = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() };
    queue.push({ payload: { $case: 'task', value: { id: ids.taskId, contextId: ids.contextId, status, artifacts: [], history, metadata: ids.metadata } } });
    return new A2aEventMapper(ids);
  }
}

function required(msg: Message | undefined): Message {
  if (!msg) throw new DomainError(ErrorCode.VALIDATION_FAILED, 'message is required', { errors: [{ field: 'message', message: 'is required' }] });
  return msg;
}

/** The message as the agent's body: its items as the one user turn, or a custom input type's body from a data part. */
function inputOf(agent: AgentDefinition, msg: Message) {
  const data = msg.parts.find((p) => p.content?.$case === 'data')?.content;
  if (agent.inputSchema && data?.$case === 'data') return parseStatelessInput(agent, data.value);
  return parseStatelessInput(agent, { chat_history: [{ role: 'user', items: itemsOf(msg.parts) }] });
}

function metaOf(response: InvokeResponse): Record<string, string> {
  return { request_id: response.request_id, ...(response.session_id ? { session_id: response.session_id } : {}), source: response.source };
}

function completed(msg: Message, response: InvokeResponse): Task {
  const ids = { contextId: newUuid(), taskId: response.request_id };
  const answer = response.output_raw ?? '';
  return {
    id: ids.taskId,
    contextId: ids.contextId,
    status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [outputArtifact(answer)],
    history: [message(Role.ROLE_USER, msg.parts, ids), message(Role.ROLE_AGENT, outputArtifact(answer).parts, ids)],
    metadata: metaOf(response),
  };
}
