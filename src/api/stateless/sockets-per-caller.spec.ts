import { SocketsPerCaller } from './sockets-per-caller';

const alice = { tenantId: 't', ownerId: 'alice' };
const bob = { tenantId: 't', ownerId: 'bob' };

describe('SocketsPerCaller', () => {
  it('admits up to the cap per caller, then refuses; other callers are counted apart', () => {
    const sockets = new SocketsPerCaller(2);
    expect(sockets.admit(alice)).toBeInstanceOf(Function);
    expect(sockets.admit(alice)).toBeInstanceOf(Function);
    expect(sockets.admit(alice)).toBeUndefined();
    expect(sockets.admit(bob)).toBeInstanceOf(Function);
    // The same owner id in another tenant is another caller.
    expect(sockets.admit({ tenantId: 'u', ownerId: 'alice' })).toBeInstanceOf(Function);
  });

  it('a release makes room once, however often it is called', () => {
    const sockets = new SocketsPerCaller(1);
    const release = sockets.admit(alice)!;
    release();
    release();
    expect(sockets.admit(alice)).toBeInstanceOf(Function);
    expect(sockets.admit(alice)).toBeUndefined();
  });

  it('keeps an entry only for callers with an open socket (bounded by the open sockets)', () => {
    const sockets = new SocketsPerCaller(3);
    const releases = Array.from({ length: 100 }, (_, i) => sockets.admit({ tenantId: 't', ownerId: `user-${i % 10}` })!).filter(Boolean);
    expect(releases).toHaveLength(30);
    expect(sockets.callers).toBe(10);
    for (const release of releases) release();
    expect(sockets.callers).toBe(0);
  });
});
