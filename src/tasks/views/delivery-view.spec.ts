import { WebhookDelivery } from '../../state/state.entities';
import { NOW, requestRecord as req, taskRecord as task } from '../lifecycle/lifecycle.fixtures';
import { adminDeliveryView, deliveryView } from './delivery-view';
import { taskView } from './task-view';

const at = (ms: number) => new Date(ms).toISOString();

function delivery(over: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    id: 'msg_1',
    event: 'approval.required',
    requestId: 'r0',
    pauseId: 'p1',
    url: 'https://hooks.example.com/in',
    secretEnv: 'HOOK_SECRET',
    createdAt: NOW - 60_000,
    attempts: 0,
    dueAt: NOW,
    ...over,
  };
}

describe('deliveryView: a webhook delivery as a request shows it', () => {
  it('pending before its first attempt, then retrying with the next attempt, the last status and error', () => {
    expect(deliveryView(delivery())).toEqual({
      id: 'msg_1',
      event: 'approval.required',
      pause_id: 'p1',
      url: 'https://hooks.example.com/in',
      status: 'pending',
      attempts: 0,
      last_attempt_at: null,
      last_status: null,
      last_error: null,
      next_attempt_at: at(NOW),
    });
    const retrying = delivery({ attempts: 3, lastAttemptAt: NOW - 5_000, lastStatus: 503, lastError: 'answered 503', dueAt: NOW + 20_000 });
    expect(deliveryView(retrying)).toMatchObject({
      status: 'pending',
      attempts: 3,
      last_attempt_at: at(NOW - 5_000),
      last_status: 503,
      last_error: 'answered 503',
      next_attempt_at: at(NOW + 20_000),
    });
  });

  it('delivered and failed (dead) have no next attempt; an event without a pause has pause_id null', () => {
    const delivered = delivery({ event: 'request.completed', pauseId: undefined, attempts: 1, lastAttemptAt: NOW, lastStatus: 200, deliveredAt: NOW });
    expect(deliveryView(delivered)).toMatchObject({ status: 'delivered', pause_id: null, last_status: 200, next_attempt_at: null });
    const dead = delivery({ attempts: 55, lastAttemptAt: NOW, lastError: 'connect ECONNREFUSED', dead: true });
    expect(deliveryView(dead)).toMatchObject({ status: 'failed', last_status: null, last_error: 'connect ECONNREFUSED', next_attempt_at: null });
  });

  it('the admin view is the same view with the ids, the time of the event and the secret variable (never the secret)', () => {
    const d = delivery({ attempts: 2, lastStatus: 500, lastAttemptAt: NOW });
    expect(adminDeliveryView({ taskId: 't', sessionId: 's' }, d)).toEqual({
      ...deliveryView(d),
      task_id: 't',
      session_id: 's',
      request_id: 'r0',
      created_at: at(NOW - 60_000),
      secret_env: 'HOOK_SECRET',
    });
  });
});

describe("taskView: each request's webhooks", () => {
  const agent = { prefix: '/A/1' };

  it('lists the deliveries of each request that has some, in outbox order, and no webhooks key on the others', () => {
    const outbox = [
      delivery({ id: 'msg_a', requestId: 'r0', event: 'request.completed', pauseId: undefined, deliveredAt: NOW, attempts: 1, lastStatus: 204 }),
      delivery({ id: 'msg_b', requestId: 'r2' }),
      delivery({ id: 'msg_c', requestId: 'r0', event: 'request.completed', url: 'https://other.example.com/', pauseId: undefined, dead: true, attempts: 9 }),
    ];
    const view = taskView(task({ requestCount: 3, outbox }), [req(0, 'Completed'), req(1, 'Completed'), req(2, 'Paused')], agent, NOW);
    const [r0, r1, r2] = view.requests;
    expect(r0!.webhooks!.map((w) => [w.id, w.status])).toEqual([
      ['msg_a', 'delivered'],
      ['msg_c', 'failed'],
    ]);
    expect(r1).not.toHaveProperty('webhooks');
    expect(r2!.webhooks).toEqual([deliveryView(outbox[1]!)]);
  });

  it('shows a task without an outbox, or with an empty one, exactly as before webhooks', () => {
    const requests = [req(0, 'Completed')];
    const plain = taskView(task(), requests, agent, NOW);
    expect(Object.keys(plain.requests[0]!)).not.toContain('webhooks');
    expect(JSON.stringify(taskView(task({ outbox: [] }), requests, agent, NOW))).toBe(JSON.stringify(plain));
  });
});
