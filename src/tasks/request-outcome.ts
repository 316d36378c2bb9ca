import { AgentDefinition } from '../agents/config/agent-definition';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { StateStore } from '../state/state-store';
import { RequestRecord } from '../state/state.entities';
import { StateResponse } from './state-response';

const POLL_MS = 200;

type Ids = { task_id: string; session_id: string; request_id: string };

/**
 * Waits for a request to end and turns its stored record into the StateResponse: a queued request
 * (`on_busy: enqueue`), or one whose stream is resumed in a replica that does not run it. The
 * request may run in any replica, so the store is the only place to watch: it is polled, which is
 * cheap next to a model call.
 */
export async function awaitRequestOutcome(
  store: StateStore,
  agent: AgentDefinition,
  tenantId: string,
  ids: Ids,
  emit?: (event: string, data: Record<string, unknown>) => void,
  signal?: AbortSignal,
): Promise<StateResponse> {
  for (;;) {
    const record = await store.getRequest(tenantId, ids.request_id);
    if (!record) throw new DomainError(ErrorCode.REQUEST_NOT_FOUND, `Request ${ids.request_id} no longer exists`);
    if (record.status !== 'Queued' && record.status !== 'Running') return outcomeOf(agent, record, ids, emit);
    if (signal?.aborted) throw new DomainError(ErrorCode.REQUEST_CANCELED, 'The client stopped waiting');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function outcomeOf(
  agent: AgentDefinition,
  record: RequestRecord,
  ids: Ids,
  emit?: (event: string, data: Record<string, unknown>) => void,
): StateResponse {
  switch (record.status) {
    case 'Completed':
      return {
        ...ids,
        status: 'Completed',
        content: { ...ids, output: record.output ?? '', source: agent.source, token_usage: record.tokenUsage, extra_data: null },
      };
    case 'Canceled': {
      const reason = record.reason ?? 'canceled';
      emit?.('cancelled', { ...ids, reason });
      const message = reason === 'superseded' ? 'Superseded by a newer follow-on' : 'The request was canceled';
      return { ...ids, status: 'Canceled', content: { ...ids, message, reason } };
    }
    default: {
      const code = Object.values(ErrorCode).includes(record.error?.code as ErrorCode) ? (record.error!.code as ErrorCode) : ErrorCode.INTERNAL;
      throw new DomainError(code, record.error?.message ?? `Request ended ${record.status}`);
    }
  }
}
