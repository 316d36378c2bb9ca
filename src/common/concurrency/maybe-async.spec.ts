import { thenOrNow } from './maybe-async';

const rethrow =
  (tag: string) =>
  (err: unknown): never => {
    throw new Error(`${tag}: ${(err as Error).message}`);
  };

describe('thenOrNow', () => {
  it('answers at once for a value, without a promise', () => {
    expect(thenOrNow(2, (n) => n * 3, rethrow('failed'))).toBe(6);
  });

  it('answers with a promise for a promise, and passes its rejection to `failed`', async () => {
    const later = thenOrNow(Promise.resolve(2), (n) => n * 3, rethrow('failed'));
    expect(later).toBeInstanceOf(Promise);
    await expect(later).resolves.toBe(6);
    await expect(thenOrNow(Promise.reject(new Error('no')), (n: number) => n, rethrow('failed'))).rejects.toThrow('failed: no');
  });

  it('lets `next` throw as it would: at once for a value, as a rejection for a promise', async () => {
    const boom = (): number => {
      throw new Error('boom');
    };
    expect(() => thenOrNow(1, boom, rethrow('failed'))).toThrow('boom');
    await expect(thenOrNow(Promise.resolve(1), boom, rethrow('failed'))).rejects.toThrow('boom');
  });
});
