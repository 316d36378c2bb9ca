import { HeaderSnapshot } from './dynamodb-header-cache';
import { HeaderCache } from './dynamodb-header-cache';

const header = (version: number, inc = 'a'): HeaderSnapshot => ({ version, inc, sessionPk: 'S', sessionSk: 's', splits: {} });

describe('HeaderCache', () => {
  it('keeps at most its capacity, dropping the least recently used first', () => {
    const cache = new HeaderCache(2);
    cache.remember('t1', header(1));
    cache.remember('t2', header(1));
    cache.get('t1');
    cache.remember('t3', header(1));

    expect(cache.get('t2')).toBeUndefined();
    expect(cache.get('t1')).toEqual(header(1));
    expect(cache.get('t3')).toEqual(header(1));
  });

  it('a read of an older version of the same incarnation does not replace a newer write; of another incarnation it does', () => {
    const cache = new HeaderCache();
    cache.remember('t', header(3));
    cache.remember('t', header(2), true);
    expect(cache.get('t')).toEqual(header(3));

    cache.remember('t', header(1, 'b'), true);
    expect(cache.get('t')).toEqual(header(1, 'b'));
    cache.remember('t', header(1, 'b'));
    cache.forget('t');
    expect(cache.get('t')).toBeUndefined();
  });

  it('remembers nothing with capacity 0', () => {
    const cache = new HeaderCache(0);
    cache.remember('t', header(1));
    expect(cache.get('t')).toBeUndefined();
  });
});
