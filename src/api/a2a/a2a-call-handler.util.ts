import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { PushNotificationNotSupportedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { A2aStatelessService } from './a2a-stateless.service';
import type { A2aCall, A2aTasksService } from './a2a-tasks.service';

/**
 * One JSON-RPC call's A2A request handler: the interface the SDK's transport dispatches to
 * (`JsonRpcTransportHandler`, and the v0.3 one), bound to the agent and the authenticated caller,
 * calling the stateful or the stateless operations. Every error is kept in `failure` for the endpoint
 * to answer with our code (the SDK's own mapping knows only its error classes), and rethrown.
 */
export class A2aCallHandler implements A2ARequestHandler {
  failure?: unknown;

  constructor(
    private readonly agent: AgentDefinition,
    private readonly principal: Principal,
    private readonly card: AgentCard,
    private readonly call: A2aCall,
    private readonly stateful: A2aTasksService,
    private readonly stateless: A2aStatelessService,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return this.refused(new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'This agent has no extended agent card'));
  }

  sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const v3 = this.agent.module === 'v3';
    return this.guard(() =>
      v3 ? this.stateful.send(this.agent, this.principal, params, this.call) : this.stateless.send(this.agent, this.principal, params, this.call),
    );
  }

  sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const v3 = this.agent.module === 'v3';
    return this.guarded(
      v3 ? this.stateful.stream(this.agent, this.principal, params, this.call) : this.stateless.stream(this.agent, this.principal, params, this.call),
    );
  }

  getTask(params: GetTaskRequest): Promise<Task> {
    return this.guard(() => this.statefulOnly(params.id, () => this.stateful.get(this.agent, this.principal, params)));
  }

  cancelTask(params: CancelTaskRequest): Promise<Task> {
    return this.guard(() => this.statefulOnly(params.id, () => this.stateful.cancel(this.agent, this.principal, params)));
  }

  resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    if (this.agent.module !== 'v3') return this.guarded(notFound(params.id));
    return this.guarded(this.stateful.resubscribe(this.agent, this.principal, params, this.call));
  }

  listTasks(): Promise<ListTasksResponse> {
    return this.unsupported('tasks/list');
  }

  createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    return this.noPush();
  }

  getTaskPushNotificationConfig(_params: GetTaskPushNotificationConfigRequest): Promise<TaskPushNotificationConfig> {
    return this.noPush();
  }

  listTaskPushNotificationConfigs(_params: ListTaskPushNotificationConfigsRequest): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.noPush();
  }

  deleteTaskPushNotificationConfig(_params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    return this.noPush();
  }

  private statefulOnly<T>(id: string, op: () => Promise<T>): Promise<T> {
    if (this.agent.module !== 'v3') throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${id}`);
    return op();
  }

  private async guard<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  private async *guarded<T>(gen: AsyncGenerator<T>): AsyncGenerator<T, void, undefined> {
    try {
      yield* gen;
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  private refused<T>(err: DomainError): Promise<T> {
    this.failure = err;
    return Promise.reject(err);
  }

  private unsupported<T>(what: string): Promise<T> {
    // A2A's own error (the SDK maps it: -32004 UnsupportedOperation), not one of ours.
    return Promise.reject(new UnsupportedOperationError(`${what} is not supported by this server`));
  }

  private noPush<T>(): Promise<T> {
    return Promise.reject(new PushNotificationNotSupportedError('Push notifications are not supported by this agent (capabilities.pushNotifications: false)'));
  }
}

// eslint-disable-next-line require-yield
async function* notFound(id: string): AsyncGenerator<StreamResponse> {
  throw new DomainError(ErrorCode.TASK_NOT_FOUND, `No task ${id}`);
}
