import type { Principal } from '../../auth/principal';

/**
 * The open `/stream` sockets of each caller (tenant and owner) on this replica, at most `max` each
 * (TA_WS_MAX_SOCKETS_PER_CALLER). Only callers with an open socket have an entry, so the memory it
 * holds is bounded by the open sockets themselves, however many callers come and go.
 */
export class SocketsPerCaller {
  private readonly open = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Callers with at least one open socket. */
  get callers(): number {
    return this.open.size;
  }

  /**
   * Counts one more socket of `principal` and returns what ends it (calling that again does
   * nothing), or undefined when the caller already holds `max`: that socket is not counted.
   */
  admit(principal: Principal): (() => void) | undefined {
    const key = `${principal.tenantId}\u0000${principal.ownerId}`;
    const mine = this.open.get(key) ?? 0;
    if (mine >= this.max) return undefined;
    this.open.set(key, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    };
  }
}
