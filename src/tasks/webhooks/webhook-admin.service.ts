import { Injectable } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { DEAD_DELIVERY_AT } from '../../state/state-store.util';
import { redeliver } from '../lifecycle/outbox';
import { AdminDeliveryView, adminDeliveryView } from '../views/delivery-view';
import { TaskReaderService } from '../writer/task-reader.service';
import { TaskWriterService } from '../writer/task-writer.service';
import { taskOfDelivery } from './webhook-events';
import { WebhookOutboxService } from './webhook-outbox.service';

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
    const deliveries: AdminDeliveryView[] = [];
    for (const entry of index.items) {
      if (entry.tenantId !== tenantId) continue;
      const task = await this.reader.current(entry);
      for (const d of task?.outbox ?? []) {
        const view = adminDeliveryView(task!, d);
        if (view.status !== 'delivered' && (status === undefined || view.status === status)) deliveries.push(view);
      }
    }
    return { deliveries, ...(index.nextCursor ? { next_cursor: index.nextCursor } : {}) };
  }

  /** Makes delivery `id` due now (a fresh retry window) and sends it from here. */
  async redeliver(tenantId: string, id: string): Promise<AdminDeliveryView> {
    const taskId = taskOfDelivery(id);
    const missing = () => new DomainError(ErrorCode.DELIVERY_NOT_FOUND, `No webhook delivery ${id}`);
    if (taskId === undefined) throw missing();
    const task = await this.reader.current({ tenantId, taskId });
    if (!task?.outbox?.some((d) => d.id === id)) throw missing();
    const { task: stored, result } = await this.writer.update({ tenantId, taskId }, redeliver(id));
    await this.outbox.sendDue(stored);
    return adminDeliveryView(stored, result);
  }
}
