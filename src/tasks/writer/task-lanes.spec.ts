import { createHook } from 'node:async_hooks';
import { TaskLanes } from './task-lanes';

/** A promise and its resolver, to hold a piece of work open until the test lets it finish. */
function gate(): { open: () => void; closed: Promise<void> } {
  let open!: () => void;
  const closed = new Promise<void>((r) => (open = r));
  return { open, closed };
}

describe('TaskLanes', () => {
  it('runs the writes of one task one at a time, and of different tasks side by side', async () => {
    const lanes = new TaskLanes();
    const order: string[] = [];
    const first = gate();
    const a1 = lanes.run('tenant', 't1', false, async () => {
      order.push('a1 start');
      await first.closed;
      order.push('a1 end');
    });
    const a2 = lanes.run('tenant', 't1', false, async () => void order.push('a2'));
    await lanes.run('tenant', 't2', false, async () => void order.push('b'));
    expect(order).toEqual(['a1 start', 'b']);
    first.open();
    await Promise.all([a1, a2]);
    expect(order).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
    expect(lanes.size).toBe(0);
  });

  it("puts the running request's own writes ahead of callers' writes that wait", async () => {
    const lanes = new TaskLanes();
    const order: string[] = [];
    const first = gate();
    const running = lanes.run('tenant', 't', false, () => first.closed);
    const callers = [1, 2, 3].map((i) => lanes.run('tenant', 't', false, async () => void order.push(`caller ${i}`)));
    const renewal = lanes.run('tenant', 't', true, async () => void order.push('renewal'));
    first.open();
    await Promise.all([running, renewal, ...callers]);
    expect(order).toEqual(['renewal', 'caller 1', 'caller 2', 'caller 3']);
  });

  it("a write on a free lane starts at once and makes one promise of the lane's own", async () => {
    const lanes = new TaskLanes();
    const written = Promise.resolve('written');
    let promises = 0;
    const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && promises++) }).enable();
    let started = false;
    const result = lanes.run('tenant', 't', false, () => ((started = true), written));
    hook.disable();
    expect(started).toBe(true);
    expect(promises).toBe(1);
    await expect(result).resolves.toBe('written');
    expect(lanes.size).toBe(0);
  });

  it('frees the lane when a write throws before it returns a promise', async () => {
    const lanes = new TaskLanes();
    await expect(
      lanes.run('tenant', 't', false, () => {
        throw new Error('bad write');
      }),
    ).rejects.toThrow('bad write');
    expect(lanes.size).toBe(0);
    await expect(lanes.run('tenant', 't', false, async () => 'next')).resolves.toBe('next');
  });

  it('frees the lane when a write fails, and passes the failure to its caller only', async () => {
    const lanes = new TaskLanes();
    await expect(lanes.run('tenant', 't', false, async () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    await expect(lanes.run('tenant', 't', false, async () => 'next')).resolves.toBe('next');
    expect(lanes.size).toBe(0);
  });
});

describe('TaskLanes: by tenant', () => {
  it("keeps one task id's lanes apart in two tenants, and holds nothing once their writes are done", async () => {
    const lanes = new TaskLanes();
    const a = gate();
    const order: string[] = [];
    const first = lanes.run('tenant-a', 't', false, () => a.closed.then(() => void order.push('a')));
    // Another tenant's task of the same id does not wait for tenant-a's.
    await lanes.run('tenant-b', 't', false, async () => void order.push('b'));
    expect(lanes.size).toBe(1);
    const second = lanes.run('tenant-a', 't', false, async () => void order.push('a again'));
    a.open();
    await Promise.all([first, second]);
    expect(order).toEqual(['b', 'a', 'a again']);
    expect(lanes.size).toBe(0);
    expect((lanes as unknown as { tenants: Map<string, unknown> }).tenants.size).toBe(0);
  });
});

describe('TaskLanes: bounded waits', () => {
  it("a caller's write waits at most maxWaitMs, then goes ahead beside a lane held by a stalled write", async () => {
    const lanes = new TaskLanes(50);
    const stalled = gate();
    const holder = lanes.run('tenant', 't', true, () => stalled.closed);
    const started = Date.now();
    await expect(lanes.run('tenant', 't', false, async () => 'answered')).resolves.toBe('answered');
    expect(Date.now() - started).toBeLessThan(1000);
    // the lane stays the holder's: a later priority write still waits for it
    const order: string[] = [];
    const next = lanes.run('tenant', 't', true, async () => void order.push('next renewal'));
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual([]);
    stalled.open();
    await Promise.all([holder, next]);
    expect(order).toEqual(['next renewal']);
    expect(lanes.size).toBe(0);
  });
});
