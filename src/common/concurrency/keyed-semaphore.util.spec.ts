import { KeyedSemaphore } from './keyed-semaphore.util';

/** A task that runs until its `finish` is called, and records that it started. */
function gate(started: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { task: () => (started.push(name), done.then(() => name)), finish: () => finish() };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedSemaphore', () => {
  it('runs at most perOrigin tasks of one origin at once, the others in arrival order', async () => {
    const limiter = new KeyedSemaphore(2);
    const started: string[] = [];
    const gates = ['a', 'b', 'c', 'd'].map((n) => gate(started, n));
    const results = gates.map((g) => limiter.run('https://hooks.example.com', g.task));
    await tick();
    expect(started).toEqual(['a', 'b']);
    expect(limiter.inFlight('https://hooks.example.com')).toBe(2);
    gates[1]!.finish();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    gates[0]!.finish();
    gates[2]!.finish();
    gates[3]!.finish();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c', 'd']);
    expect(limiter.inFlight('https://hooks.example.com')).toBe(0);
  });

  it('counts origins apart', async () => {
    const limiter = new KeyedSemaphore(1);
    const started: string[] = [];
    const one = gate(started, 'one');
    const other = gate(started, 'other');
    const runs = [limiter.run('https://a.example.com', one.task), limiter.run('https://b.example.com', other.task)];
    await tick();
    expect(started).toEqual(['one', 'other']);
    one.finish();
    other.finish();
    await Promise.all(runs);
  });

  it('frees the slot when a task fails', async () => {
    const limiter = new KeyedSemaphore(1);
    await expect(limiter.run('o', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run('o', () => Promise.resolve('next'))).resolves.toBe('next');
    expect(limiter.inFlight('o')).toBe(0);
  });

  it('refuses a bound below 1', () => {
    expect(() => new KeyedSemaphore(0)).toThrow('perKey must be an integer >= 1 (got 0)');
  });
});
