import { Injectable } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { TaskRecord, WebhookDelivery } from '../../state/state.entities';
import { DEAD_DELIVERY_AT } from '../../state/state-store.util';
import { redeliver } from '../lifecycle/outbox';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';
import { taskOfDelivery } from './webhook-events';
import { WebhookOutboxService } from './webhook-outbox.service';

export type DeliveryStatus = 'pending' | 'failed' | 'delivered';

/** A delivery as the admin routes show it (never its secret: only the variable's name). */
export interface DeliveryView {
  id: string;
  task_id: string;
  session_id: string;
  request_id: string;
  event: string;
  url: string;
  status: DeliveryStatus;
  attempts: number;
  created_at: string;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  secret_env: string;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function deliveryView(task: Pick<TaskRecord, 'taskId' | 'sessionId'>, d: WebhookDelivery): DeliveryView {
  const status: DeliveryStatus = d.deliveredAt !== undefined ? 'delivered' : d.dead ? 'failed' : 'pending';
  return {
    id: d.id,
    task_id: task.taskId,
    session_id: task.sessionId,
    request_id: d.requestId,
    event: d.event,
    url: d.url,
    status,
    attempts: d.attempts,
    created_at: new Date(d.createdAt).toISOString(),
    next_attempt_at: status === 'pending' ? iso(d.dueAt) : null,
    last_attempt_at: iso(d.lastAttemptAt),
    last_status: d.lastStatus ?? null,
    last_error: d.lastError ?? null,
    secret_env: d.secretEnv,
  };
}

/**
 * `GET /admin/webhooks/deliveries` and `POST …/{id}/redeliver` (docs/webhooks.md, "Delivery"):
 * the caller's tenant's deliveries that wait (`pending`) or are dead (`failed`), found through the
 * lease index, which lists every task with a delivery to make (dead ones at DEAD_DELIVERY_AT); and a
 * dead (or waiting) one made due again at once, with a fresh retry window.
 */
@Injectable()
export class WebhookAdminService {
  constructor(
    private readonly reader: TaskReaderService,
    private readonly writer: TaskWriterService,
    private readonly outbox: WebhookOutboxService,
  ) {}

  /**
   * One page: the deliveries of `status` among the tasks of the next `limit` index entries (of
   * every tenant: those of others are skipped, so a page may hold fewer, even none, and still name
   * a next cursor). Cost: `limit` index entries and one read per task of the tenant among them.
   */
  async list(tenantId: string, status: 'pending' | 'failed' | undefined, page: { limit: number; cursor?: string }) {
    const index = await this.reader.dueBy(DEAD_DELIVERY_AT, page);
    const deliveries: DeliveryView[] = [];
    for (const entry of index.items) {
      if (entry.tenantId !== tenantId) continue;
      const task = await this.reader.current(entry);
      for (const d of task?.outbox ?? []) {
        const view = deliveryView(task!, d);
        if (view.status !== 'delivered' && (status === undefined || view.status === status)) deliveries.push(view);
      }
    }
    return { deliveries, ...(index.nextCursor ? { next_cursor: index.nextCursor } : {}) };
  }

  /** Makes delivery `id` due now (a fresh retry window) and sends it from here. */
  async redeliver(tenantId: string, id: string): Promise<DeliveryView> {
    const taskId = taskOfDelivery(id);
    const missing = () => new DomainError(ErrorCode.DELIVERY_NOT_FOUND, `No webhook delivery ${id}`);
    if (taskId === undefined) throw missing();
    const task = await this.reader.current({ tenantId, taskId });
    if (!task?.outbox?.some((d) => d.id === id)) throw missing();
    const { task: stored, result } = await this.writer.update({ tenantId, taskId }, redeliver(id));
    await this.outbox.sendDue(stored);
    return deliveryView(stored, result);
  }
}
