import { WebhookDelivery } from './state.entities';
import { DEAD_DELIVERY_AT, frozenCopy, frozenOwn, sealedFor, wakeAt } from './state-store.util';

const NOW = 1_800_000_000_000;

function delivery(dueAt: number, over: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    id: `d${dueAt}`,
    event: 'request.completed',
    requestId: 'r0',
    url: 'https://a.example.com/hook',
    secretEnv: 'S',
    createdAt: NOW,
    attempts: 0,
    dueAt,
    ...over,
  };
}

const lease = (expiresAt: number) => ({ requestId: 'r0', expiresAt });

describe('wakeAt', () => {
  it('is undefined with nothing to wait for', () => {
    expect(wakeAt({ status: 'Completed' })).toBeUndefined();
    expect(wakeAt({ status: 'Completed', outbox: [] })).toBeUndefined();
  });

  it("is the lease's expiry", () => {
    expect(wakeAt({ status: 'Running', lease: lease(NOW + 30_000) })).toBe(NOW + 30_000);
  });

  it("is the outbox's first due waiting delivery", () => {
    expect(wakeAt({ status: 'Completed', outbox: [delivery(NOW + 9), delivery(NOW + 3), delivery(NOW + 5)] })).toBe(NOW + 3);
  });

  it("is a paused task's pause expiry", () => {
    expect(wakeAt({ status: 'Paused', pauseExpiresAt: NOW + 60_000 })).toBe(NOW + 60_000);
  });

  it.each([
    ['the lease', NOW + 1, NOW + 2, NOW + 3],
    ['the pause expiry', NOW + 2, NOW + 1, NOW + 3],
    ['a due delivery', NOW + 3, NOW + 2, NOW + 1],
  ])('is the earliest of lease, pause expiry and due delivery: here %s', (_what, leaseAt, pauseAt, dueAt) => {
    expect(wakeAt({ status: 'Paused', lease: lease(leaseAt), pauseExpiresAt: pauseAt, outbox: [delivery(NOW + 50), delivery(dueAt)] })).toBe(NOW + 1);
  });

  it('ignores a pause expiry left on a task that is no longer Paused', () => {
    expect(wakeAt({ status: 'Running', lease: lease(NOW + 5), pauseExpiresAt: NOW + 1 })).toBe(NOW + 5);
    expect(wakeAt({ status: 'Completed', pauseExpiresAt: NOW + 1 })).toBeUndefined();
  });

  it('ignores delivered deliveries', () => {
    expect(wakeAt({ status: 'Completed', outbox: [delivery(NOW + 1, { deliveredAt: NOW })] })).toBeUndefined();
    expect(wakeAt({ status: 'Running', lease: lease(NOW + 5), outbox: [delivery(NOW + 1, { deliveredAt: NOW }), delivery(NOW + 7)] })).toBe(NOW + 5);
  });

  it('lists a task whose only undelivered deliveries are dead at DEAD_DELIVERY_AT', () => {
    expect(wakeAt({ status: 'Completed', outbox: [delivery(NOW + 1, { dead: true }), delivery(NOW, { deliveredAt: NOW })] })).toBe(DEAD_DELIVERY_AT);
    expect(wakeAt({ status: 'Completed', outbox: [delivery(NOW + 1, { dead: true }), delivery(NOW + 7)] })).toBe(NOW + 7);
    expect(wakeAt({ status: 'Running', lease: lease(NOW + 5), outbox: [delivery(NOW + 1, { dead: true })] })).toBe(NOW + 5);
    expect(DEAD_DELIVERY_AT).toBeGreaterThan(Date.parse('9999-12-31'));
    expect(String(DEAD_DELIVERY_AT)).toHaveLength(15);
  });

  it('is undefined for a task marked for deletion', () => {
    expect(
      wakeAt({ status: 'Paused', deletingAt: 'x', lease: lease(NOW), pauseExpiresAt: NOW, outbox: [delivery(NOW), delivery(NOW, { dead: true })] }),
    ).toBeUndefined();
  });
});

describe('frozenCopy', () => {
  it('copies deeply and freezes every level, so changing the original changes nothing stored', () => {
    const original = { id: 't', lease: { requestId: 'r', expiresAt: 5 }, messages: [{ role: 'user', items: [{ content: 'hi' }] }], none: null, n: 1 };
    const copy = frozenCopy(original);
    expect(copy).toEqual(original);
    expect(copy).not.toBe(original);
    original.lease.expiresAt = 9;
    original.messages[0]!.items[0]!.content = 'changed';
    original.messages.push({ role: 'user', items: [] });
    expect(copy.lease.expiresAt).toBe(5);
    expect(copy.messages).toHaveLength(1);
    expect(copy.messages[0]!.items[0]!.content).toBe('hi');
    for (const level of [copy, copy.lease, copy.messages, copy.messages[0], copy.messages[0]!.items, copy.messages[0]!.items[0]])
      expect(Object.isFrozen(level)).toBe(true);
  });

  it('shares what is frozen already, at any level', () => {
    const kept = Object.freeze({ requestId: 'r', expiresAt: 5 });
    const record = Object.freeze({ id: 'x' });
    const copy = frozenCopy({ lease: kept, nested: { record } });
    expect(copy.lease).toBe(kept);
    expect(copy.nested.record).toBe(record);
    expect(frozenCopy(copy)).toBe(copy);
    expect(frozenCopy('text')).toBe('text');
  });
});

describe('frozenOwn', () => {
  it("freezes the object it is handed where it is, and copies its values as frozenCopy does: the caller's nested objects stay its own", () => {
    const lease = { requestId: 'r', expiresAt: 5 };
    const kept = Object.freeze({ id: 'k' });
    const fresh = { id: 't', lease, kept, items: [{ content: 'hi' }], n: 1 };
    const own = frozenOwn(fresh);
    expect(own).toBe(fresh);
    expect(Object.isFrozen(own)).toBe(true);
    expect(own.lease).not.toBe(lease);
    expect(own.lease).toEqual({ requestId: 'r', expiresAt: 5 });
    expect(Object.isFrozen(own.lease) && Object.isFrozen(own.items) && Object.isFrozen(own.items[0])).toBe(true);
    expect(Object.isFrozen(lease)).toBe(false);
    expect(own.kept).toBe(kept);
    lease.expiresAt = 9;
    expect(own.lease.expiresAt).toBe(5);
  });
});

describe('sealedFor', () => {
  it('keeps a record already frozen and stamped with this tenant as it is', () => {
    const r = Object.freeze({ seq: 0, tenantId: 't1', items: Object.freeze([Object.freeze({ a: 1 })]) });
    expect(sealedFor(r, 't1')).toBe(r);
  });

  it('copies and stamps one of another tenant, or not frozen, deep-frozen', () => {
    const other = Object.freeze({ seq: 0, tenantId: 't2', items: [{ a: 1 }] });
    const out = sealedFor(other, 't1');
    expect(out).not.toBe(other);
    expect(out.tenantId).toBe('t1');
    expect(Object.isFrozen(out) && Object.isFrozen(out.items) && Object.isFrozen(out.items[0])).toBe(true);
    const open: { seq: number; tenantId?: string } = { seq: 1, tenantId: 't1' };
    const sealed = sealedFor(open, 't1');
    expect(sealed).not.toBe(open);
    expect(Object.isFrozen(sealed)).toBe(true);
    expect(Object.isFrozen(open)).toBe(false);
  });
});
