import { WEBHOOK_EVENTS, WebhookSecret, WebhookTarget } from '../../agents/config/webhooks.schema';
import { PendingApprovals } from '../../state/state.entities';
import { NOW, requestRecord } from '../lifecycle/lifecycle.fixtures';
import { deliveriesOf, deliveryId, destinationsOf, eventsOf, taskOfDelivery, WebhookEvent } from './webhook-events';

const secret = (env: string, byte: number) => new WebhookSecret(env, `whsec_${Buffer.alloc(32, byte).toString('base64')}`);
const pause = (pauseId: string): PendingApprovals => ({
  pauseId,
  calls: [{ id: 'c1', name: 'Notes-wipe', arguments: '{}', risk: 'write_high_risk' }],
  pending: ['c1'],
  plan: false,
  requestedAt: 'x',
});
const paused = (pauseId: string) => requestRecord(0, 'Paused', { pendingApprovals: pause(pauseId), pauses: [pause(pauseId)] });
const types = (events: WebhookEvent[]) => events.map((e) => [e.type, e.pauseId]);

describe('eventsOf', () => {
  it.each([
    ['Completed', 'request.completed'],
    ['Failed', 'request.failed'],
    ['Canceled', 'request.canceled'],
  ] as const)('reports Running → %s as %s, about the request written', (status, type) => {
    const after = requestRecord(0, status, { reason: status === 'Completed' ? undefined : 'canceled' });
    expect(eventsOf({ status: 'Running' }, after)).toEqual([{ type, request: after }]);
  });

  it('reports the end of a request the commit creates', () => {
    expect(types(eventsOf(undefined, requestRecord(0, 'Failed', { reason: 'superseded' })))).toEqual([['request.failed', undefined]]);
  });

  it('reports an expired pause as approval.expired (with its pause id), then request.canceled', () => {
    const after = requestRecord(0, 'Canceled', { reason: 'expired', pauses: [pause('p1')] });
    expect(eventsOf(paused('p1'), after)).toEqual([
      { type: 'approval.expired', request: after, pauseId: 'p1' },
      { type: 'request.canceled', request: after },
    ]);
    // The pause as read wins over the request's list; without either, no pause id.
    expect(types(eventsOf({ status: 'Paused', pendingApprovals: pause('p2') }, after))[0]).toEqual(['approval.expired', 'p2']);
    expect(eventsOf({ status: 'Paused' }, { ...after, pauses: [] })[0]).toEqual({ type: 'approval.expired', request: { ...after, pauses: [] } });
  });

  it('reports another cancel as request.canceled only', () => {
    expect(types(eventsOf(paused('p1'), requestRecord(0, 'Canceled', { reason: 'rejected' })))).toEqual([['request.canceled', undefined]]);
  });

  it('reports a pause as approval.required with its pause id', () => {
    const after = paused('p1');
    expect(eventsOf({ status: 'Running' }, after)).toEqual([{ type: 'approval.required', request: after, pauseId: 'p1' }]);
    expect(types(eventsOf(undefined, after))).toEqual([['approval.required', 'p1']]);
  });

  it('reports a new pause of a paused request, and the same pause written again not at all', () => {
    expect(eventsOf(paused('p1'), paused('p1'))).toEqual([]);
    expect(types(eventsOf(paused('p1'), paused('p2')))).toEqual([['approval.required', 'p2']]);
  });

  it.each(['Running', 'Completed', 'Failed', 'Canceled', 'Queued'] as const)('reports nothing for %s written again', (status) => {
    expect(eventsOf({ status }, requestRecord(0, status, { reason: 'expired' }))).toEqual([]);
  });

  it('reports nothing for a request that starts or waits', () => {
    expect(eventsOf({ status: 'Queued' }, requestRecord(0, 'Running'))).toEqual([]);
    expect(eventsOf(undefined, requestRecord(0, 'Queued'))).toEqual([]);
  });
});

describe('destinationsOf', () => {
  const all: WebhookTarget = { url: 'https://a.example.com/hook', events: [...WEBHOOK_EVENTS], secret: secret('A_SECRET', 1), allowRequestUrls: [] };
  const done: WebhookTarget = { url: 'https://b.example.com/done', events: ['request.completed'], secret: secret('B_SECRET', 2), allowRequestUrls: [] };
  const own: WebhookTarget = { events: ['approval.required'], secret: secret('OWN_SECRET', 3), allowRequestUrls: ['https://hooks.example.com/own/'] };

  it('sends to every agent webhook with a url, with its events and secret variable', () => {
    expect(destinationsOf([all, own, done], {})).toEqual([
      { url: 'https://a.example.com/hook', events: WEBHOOK_EVENTS, secretEnv: 'A_SECRET' },
      { url: 'https://b.example.com/done', events: ['request.completed'], secretEnv: 'B_SECRET' },
    ]);
  });

  it("adds the request's webhook_url, under its entry's events and secret", () => {
    expect(destinationsOf([all, own], { webhookUrl: 'https://hooks.example.com/own/bot-7#frag' })).toEqual([
      { url: 'https://a.example.com/hook', events: WEBHOOK_EVENTS, secretEnv: 'A_SECRET' },
      { url: 'https://hooks.example.com/own/bot-7', events: ['approval.required'], secretEnv: 'OWN_SECRET' },
    ]);
  });

  it('drops a webhook_url no longer allowed, silently', () => {
    expect(
      destinationsOf([all, { ...own, allowRequestUrls: ['https://hooks.example.com/other/'] }], { webhookUrl: 'https://hooks.example.com/own/bot-7' }),
    ).toEqual([{ url: 'https://a.example.com/hook', events: WEBHOOK_EVENTS, secretEnv: 'A_SECRET' }]);
    expect(destinationsOf([], { webhookUrl: 'https://hooks.example.com/own/bot-7' })).toEqual([]);
  });
});

describe('deliveriesOf', () => {
  const request = paused('p1');
  const required: WebhookEvent = { type: 'approval.required', request, pauseId: 'p1' };
  const completed: WebhookEvent = { type: 'request.completed', request: requestRecord(0, 'Completed') };
  const everything = { url: 'https://a.example.com/hook', events: WEBHOOK_EVENTS, secretEnv: 'A_SECRET' };
  const onlyDone = { url: 'https://b.example.com/done', events: ['request.completed' as const], secretEnv: 'B_SECRET' };
  const plan = (events = [required, completed], destinations = [everything, onlyDone]) => deliveriesOf('t', events, destinations, NOW, NOW + 31_000);

  it('plans one delivery per event and destination that lists it', () => {
    const out = plan();
    expect(out.map((d) => [d.event, d.url])).toEqual([
      ['approval.required', everything.url],
      ['request.completed', everything.url],
      ['request.completed', onlyDone.url],
    ]);
    expect(out[0]).toEqual({
      id: deliveryId('ten', 't', 'r0', 'approval.required', 'p1', everything.url),
      event: 'approval.required',
      requestId: 'r0',
      pauseId: 'p1',
      url: everything.url,
      secretEnv: 'A_SECRET',
      createdAt: NOW,
      attempts: 0,
      dueAt: NOW + 31_000,
    });
    expect(out[2]).not.toHaveProperty('pauseId');
    expect(out[2]!.secretEnv).toBe('B_SECRET');
    expect(new Set(out.map((d) => d.id)).size).toBe(3);
  });

  it('plans nothing without events or destinations', () => {
    expect(plan([])).toEqual([]);
    expect(plan(undefined, [])).toEqual([]);
  });

  it('gives the same event and destination the same id however often it is planned, another one another id', () => {
    expect(plan()).toEqual(plan());
    const id = (over: Partial<{ tenant: string; task: string; request: string; type: string; pause: string | undefined; url: string }> = {}) => {
      const o = { tenant: 'ten', task: 't', request: 'r0', type: 'approval.required', pause: 'p1' as string | undefined, url: everything.url, ...over };
      return deliveryId(o.tenant, o.task, o.request, o.type, o.pause, o.url);
    };
    const ids = [
      id(),
      id({ url: onlyDone.url }),
      id({ type: 'approval.expired' }),
      id({ pause: 'p2' }),
      id({ pause: undefined }),
      id({ request: 'r1' }),
      id({ task: 'u' }),
      id({ tenant: 'ten2' }),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(id()).toBe(id());
  });
});

describe('deliveryId and taskOfDelivery', () => {
  it.each(['t', 'task:with:colons', 'a/b/c', 'a.b', 'задача-🙂', '2f1e8c9a-0d1c-4d4e-9b7f-3c2a1b0e9d8f'])(
    'names the task %s in a Standard Webhooks id',
    (taskId) => {
      const id = deliveryId('ten', taskId, 'r0', 'request.completed', undefined, 'https://a.example.com/hook');
      expect(id).toMatch(/^msg_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
      expect(taskOfDelivery(id)).toBe(taskId);
    },
  );

  it.each([
    ['an empty string', ''],
    ['another prefix', `evt_dA.${'a'.repeat(22)}`],
    ['no digest', 'msg_dA'],
    ['a short digest', `msg_dA.${'a'.repeat(21)}`],
    ['a long digest', `msg_dA.${'a'.repeat(23)}`],
    ['no task', `msg_.${'a'.repeat(22)}`],
    ['a character outside base64url', `msg_d+A.${'a'.repeat(22)}`],
    ['something before it', ` msg_dA.${'a'.repeat(22)}`],
  ])('is undefined for %s', (_what, id) => {
    expect(taskOfDelivery(id)).toBeUndefined();
  });
});
