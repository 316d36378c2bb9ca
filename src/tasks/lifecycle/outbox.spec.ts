import { ErrorCode } from '../../common/errors/error-code';
import { WebhookDelivery } from '../../state/state.entities';
import { apply, NOW, refusal, taskRecord } from './lifecycle.fixtures';
import { claimDeliveries, dueDeliveries, isWaiting, KEPT_DEAD, KEPT_DELIVERED, MAX_WAITING, redeliver, settleDelivery, withDeliveries } from './outbox';
import { TaskState } from './transition';

function delivery(n: number | string, over: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    id: `d${n}`,
    event: 'request.completed',
    requestId: 'r0',
    url: 'https://hooks.example.com/a',
    secretEnv: 'HOOK_SECRET',
    createdAt: NOW - 10_000,
    attempts: 0,
    dueAt: NOW,
    ...over,
  };
}

const many = (from: number, count: number, over: Partial<WebhookDelivery> = {}) => Array.from({ length: count }, (_, i) => delivery(from + i, over));
const ids = (outbox: readonly WebhookDelivery[] | undefined) => (outbox ?? []).map((d) => d.id);
const state = (outbox?: WebhookDelivery[]): TaskState => ({ task: taskRecord({ outbox }), requests: [] });
const delivered = { deliveredAt: NOW - 1 };
const dead = { dead: true, lastError: 'answered 500' };

describe('withDeliveries', () => {
  it('appends new deliveries to an outbox, or starts one', () => {
    expect(withDeliveries(undefined, [delivery(1)])).toEqual([delivery(1)]);
    expect(ids(withDeliveries([delivery(1)], [delivery(2), delivery(3)]))).toEqual(['d1', 'd2', 'd3']);
  });

  it('keeps a delivery planned again as it is (the same id)', () => {
    const sent = delivery(1, { attempts: 2, lastError: 'timeout', dueAt: NOW + 5000 });
    expect(withDeliveries([sent], [delivery(1), delivery(2)])).toEqual([sent, delivery(2)]);
  });

  it(`gives up the oldest waiting past ${MAX_WAITING}, as dead with why`, () => {
    const out = withDeliveries(many(0, MAX_WAITING - 1), many(MAX_WAITING - 1, 3));
    expect(out).toHaveLength(MAX_WAITING + 2);
    expect(out.filter(isWaiting)).toHaveLength(MAX_WAITING);
    expect(ids(out.filter((d) => d.dead))).toEqual(['d0', 'd1']);
    expect(out[0]!.lastError).toMatch(/given up: more than 50 deliveries/);
    expect(ids(out.filter(isWaiting))[0]).toBe('d2');
  });

  it(`keeps the newest ${KEPT_DEAD} dead`, () => {
    const out = withDeliveries(many(0, KEPT_DEAD, dead), [delivery('new')]);
    expect(out).toHaveLength(KEPT_DEAD + 1);
    // One more given up drops the oldest dead.
    const full = withDeliveries(out, many(100, MAX_WAITING));
    const deadIds = ids(full.filter((d) => d.dead));
    expect(deadIds).toHaveLength(KEPT_DEAD);
    expect(deadIds[0]).toBe('d1');
    expect(deadIds.at(-1)).toBe('dnew');
  });

  it(`keeps the newest ${KEPT_DELIVERED} delivered, and every waiting one`, () => {
    const out = withDeliveries([...many(0, KEPT_DELIVERED + 2, delivered), ...many(50, 3)], [delivery('new')]);
    expect(ids(out.filter((d) => d.deliveredAt !== undefined))).toEqual(ids(many(2, KEPT_DELIVERED)));
    expect(ids(out.filter(isWaiting))).toEqual(['d50', 'd51', 'd52', 'dnew']);
  });
});

describe('claimDeliveries', () => {
  const outbox = [delivery(1), delivery(2, { dueAt: NOW - 5 }), delivery(3, { dueAt: NOW + 1 }), delivery(4, delivered), delivery(5, dead)];

  it('claims the waiting deliveries due by now: their dueAt moves to the end of the claim', () => {
    const t = claimDeliveries(undefined, 31_000);
    // Header only: no request read.
    expect(t.reads !== 'all' && t.reads(taskRecord())).toEqual([]);
    const c = apply(t, state(outbox));
    expect(c.result).toEqual([delivery(1, { dueAt: NOW + 31_000 }), delivery(2, { dueAt: NOW + 31_000 })]);
    expect(c.task.outbox).toEqual([c.result[0], c.result[1], ...outbox.slice(2)]);
    expect(c.requests).toEqual([]);
  });

  it('claims only the ids named', () => {
    const c = apply(claimDeliveries(['d2', 'd3', 'd4', 'd9'], 1000), state(outbox));
    expect(c.result).toEqual([delivery(2, { dueAt: NOW + 1000 })]);
    expect(c.task.outbox![0]).toBe(outbox[0]);
  });

  it('writes nothing when none is due', () => {
    expect(claimDeliveries(undefined, 1000).apply(state(outbox.slice(2)), NOW)).toEqual({ unchanged: [] });
    expect(claimDeliveries(['d3'], 1000).apply(state(outbox), NOW)).toEqual({ unchanged: [] });
    expect(claimDeliveries(undefined, 1000).apply(state(undefined), NOW)).toEqual({ unchanged: [] });
  });
});

describe('settleDelivery', () => {
  const sent = delivery(1, { attempts: 1, dueAt: NOW + 31_000, lastStatus: 503, lastError: 'answered 503' });
  const settle = (outcome: Parameters<typeof settleDelivery>[1], outbox = [delivery(0), sent]) => apply(settleDelivery('d1', outcome), state(outbox));

  it('records a delivery: delivered now, the last error dropped', () => {
    const c = settle({ ok: true, status: 204 });
    expect(c.result).toEqual({ ...delivery(1), attempts: 2, dueAt: NOW + 31_000, lastStatus: 204, lastAttemptAt: NOW, deliveredAt: NOW });
    expect(c.task.outbox).toEqual([delivery(0), c.result]);
    expect(isWaiting(c.result!)).toBe(false);
  });

  it('drops the last status of a delivery that reports none', () => {
    expect(settle({ ok: true }).result).not.toHaveProperty('lastStatus');
  });

  it('makes a failed one due again at retryAt, with what went wrong', () => {
    const c = settle({ ok: false, status: 500, error: 'answered 500 Internal Server Error', retryAt: NOW + 60_000 });
    expect(c.result).toEqual({
      ...sent,
      attempts: 2,
      dueAt: NOW + 60_000,
      lastAttemptAt: NOW,
      lastStatus: 500,
      lastError: 'answered 500 Internal Server Error',
    });
    expect(isWaiting(c.result!)).toBe(true);
    expect(settle({ ok: false, error: 'connect ECONNREFUSED', retryAt: NOW + 1 }).result).toMatchObject({ lastError: 'connect ECONNREFUSED', dueAt: NOW + 1 });
    expect(settle({ ok: false, status: 429, retryAt: NOW + 1 }).result).toMatchObject({ lastStatus: 429, lastError: 'answered 429' });
  });

  it('makes a failed one without retryAt dead', () => {
    const c = settle({ ok: false, status: 410, error: 'answered 410' });
    expect(c.result).toEqual({ ...sent, attempts: 2, lastAttemptAt: NOW, lastStatus: 410, lastError: 'answered 410', dead: true });
    expect(dueDeliveries(c.task, NOW + 10 ** 9)).toEqual([delivery(0)]);
  });

  it(`trims the outbox: a delivery past ${KEPT_DELIVERED} delivered drops the oldest`, () => {
    const c = settle({ ok: true, status: 200 }, [...many(10, KEPT_DELIVERED, delivered), sent]);
    expect(ids(c.task.outbox)).toEqual([...ids(many(11, KEPT_DELIVERED - 1)), 'd1']);
  });

  it('leaves an unknown, delivered or dead delivery alone', () => {
    expect(settleDelivery('d9', { ok: true }).apply(state([sent]), NOW)).toEqual({ unchanged: undefined });
    expect(settleDelivery('d1', { ok: true }).apply(state([{ ...sent, ...delivered }]), NOW)).toEqual({ unchanged: undefined });
    expect(settleDelivery('d1', { ok: false, retryAt: NOW + 1 }).apply(state([{ ...sent, ...dead }]), NOW)).toEqual({ unchanged: undefined });
    expect(settleDelivery('d1', { ok: true }).apply(state(undefined), NOW)).toEqual({ unchanged: undefined });
  });
});

describe('redeliver', () => {
  it('makes a dead delivery due now, with a fresh retry window', () => {
    const gone = delivery(1, { ...dead, attempts: 9, dueAt: NOW - 99, lastAttemptAt: NOW - 99 });
    const c = apply(redeliver('d1'), state([delivery(0), gone]));
    expect(c.result).toEqual({ ...delivery(1), lastError: 'answered 500', lastAttemptAt: NOW - 99, attempts: 0, retryFrom: NOW, dueAt: NOW });
    expect(c.task.outbox).toEqual([delivery(0), c.result]);
    expect(dueDeliveries(c.task, NOW)).toEqual([delivery(0), c.result]);
  });

  it('sends a delivered one again', () => {
    const c = apply(redeliver('d1'), state([delivery(1, { ...delivered, attempts: 1 })]), NOW + 7);
    expect(c.result).not.toHaveProperty('deliveredAt');
    expect(c.result).toMatchObject({ attempts: 0, retryFrom: NOW + 7, dueAt: NOW + 7 });
    expect(isWaiting(c.result)).toBe(true);
  });

  it('is refused (404 DELIVERY_NOT_FOUND) for an id the task has not', () => {
    expect(refusal(() => redeliver('d9').apply(state([delivery(1)]), NOW))).toBe(ErrorCode.DELIVERY_NOT_FOUND);
    expect(refusal(() => redeliver('d1').apply(state(undefined), NOW))).toBe(ErrorCode.DELIVERY_NOT_FOUND);
  });
});

describe('dueDeliveries and isWaiting', () => {
  it('lists the waiting deliveries due by now (inclusive)', () => {
    const outbox = [delivery(1), delivery(2, { dueAt: NOW + 1 }), delivery(3, { dueAt: NOW - 1, ...delivered }), delivery(4, { dueAt: NOW - 1, ...dead })];
    expect(ids(dueDeliveries({ outbox }, NOW))).toEqual(['d1']);
    expect(ids(dueDeliveries({ outbox }, NOW + 1))).toEqual(['d1', 'd2']);
    expect(dueDeliveries({}, NOW)).toEqual([]);
  });

  it('is waiting while neither delivered nor dead', () => {
    expect(isWaiting(delivery(1))).toBe(true);
    expect(isWaiting(delivery(1, { deliveredAt: 0 }))).toBe(false);
    expect(isWaiting(delivery(1, { dead: true }))).toBe(false);
  });
});

describe('outbox: one copy of each delivery id', () => {
  it('withDeliveries keeps one of two deliveries with the same id planned together', () => {
    const d: WebhookDelivery = {
      id: 'msg_a.x',
      event: 'request.completed',
      requestId: 'r',
      url: 'https://h/x',
      secretEnv: 'S',
      createdAt: 1,
      attempts: 0,
      dueAt: 2,
    };
    expect(withDeliveries(undefined, [d, { ...d }])).toEqual([d]);
  });

  it('settleDelivery drops the status of an earlier attempt when this one got no answer', () => {
    const d: WebhookDelivery = {
      id: 'msg_a.x',
      event: 'request.completed',
      requestId: 'r',
      url: 'https://h/x',
      secretEnv: 'S',
      createdAt: 1,
      attempts: 1,
      dueAt: 2,
      lastStatus: 503,
    };
    const task = taskRecord({ outbox: [d] });
    const change = settleDelivery('msg_a.x', { ok: false, error: 'connect ECONNREFUSED', retryAt: 10 }).apply({ task, requests: [] }, 5);
    expect('unchanged' in change).toBe(false);
    const next = (change as { result: { lastStatus?: number; lastError?: string } }).result;
    expect(next.lastStatus).toBeUndefined();
    expect(next.lastError).toBe('connect ECONNREFUSED');
  });
});
