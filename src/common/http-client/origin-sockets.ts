import { isIP, Socket, connect as netConnect } from 'node:net';
import { connect as tlsConnect, TLSSocket } from 'node:tls';

/** The bounds of one origin's kept-alive sockets. */
export interface SocketLimits {
  /** Sockets open at once (in use and idle); calls beyond wait for one, first come first served. */
  max: number;
  /** Idle sockets kept; one released beyond this is closed. */
  maxIdle: number;
  /** An idle socket is closed after this long (ms). */
  idleMs: number;
}

/** A call's claim on a socket: `cancel` gives up the wait (a timeout, an abort) or, once given, does nothing. */
export interface SocketClaim {
  cancel(): void;
}

/** What an idle socket listens to: its peer closing it, an error, or bytes nobody asked for. */
interface IdleWatch {
  gone: () => void;
}

/**
 * The kept-alive connections to one origin (scheme, host, port): plain TCP or TLS with the
 * host's name for SNI and certificate checks, HTTP/1.1 only. The most recently released idle
 * socket is handed out first (the likeliest to be warm and open); an idle one its peer closes,
 * that errs or that receives anything is dropped; one idle for `idleMs` is closed. At most `max`
 * sockets exist at once; calls beyond wait in order. The model client's and the DynamoDB store's, in place of Node's
 * http Agent (issue 27): see http-exchange.ts.
 */
export class OriginSockets {
  private readonly idle: Socket[] = [];
  private readonly watches = new WeakMap<Socket, IdleWatch>();
  private readonly waiting: Array<(socket: Socket) => void> = [];
  /** Sockets open or opening, idle ones included. */
  private open = 0;
  private readonly host: string;
  private readonly port: number;
  private readonly tls: boolean;
  /** The last TLS session the origin gave, offered when the next socket connects (a shorter handshake). */
  private session?: Buffer;

  constructor(
    url: URL,
    private readonly limits: SocketLimits,
  ) {
    this.tls = url.protocol === 'https:';
    // An IPv6 literal comes bracketed in a URL, not in a connect call.
    this.host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = Number(url.port || (this.tls ? 443 : 80));
  }

  /** Sockets open now (in use or idle), and idle. */
  counts(): { open: number; idle: number; waiting: number } {
    return { open: this.open, idle: this.idle.length, waiting: this.waiting.length };
  }

  /**
   * Hands `use` a socket: an idle one at once, else a new one when under `max` (connecting: its
   * writes wait for the connection, and its failure comes as its `error`), else the next one freed.
   */
  claim(use: (socket: Socket) => void): SocketClaim {
    for (let socket = this.idle.pop(); socket; socket = this.idle.pop()) {
      this.unwatch(socket);
      if (!socket.destroyed && socket.writable) {
        use(socket);
        return NO_CLAIM;
      }
      // Half-closed by its peer before the watch heard it: not for a call, and not left open either.
      drop(socket);
      this.open--;
    }
    if (this.open < this.limits.max) {
      this.open++;
      use(this.connect());
      return NO_CLAIM;
    }
    this.waiting.push(use);
    return {
      cancel: () => {
        const at = this.waiting.indexOf(use);
        if (at >= 0) this.waiting.splice(at, 1);
      },
    };
  }

  /**
   * A call is done with `socket`: kept for the next call when `reusable` (its answer read whole, the
   * server keeping it open), else destroyed. Either way a waiting call gets a socket.
   */
  release(socket: Socket, reusable: boolean): void {
    if (reusable && !socket.destroyed && socket.writable) {
      const next = this.waiting.shift();
      if (next) return next(socket);
      if (this.idle.length < this.limits.maxIdle) {
        this.watch(socket);
        this.idle.push(socket);
        return;
      }
    }
    drop(socket);
    this.open--;
    const next = this.waiting.shift();
    if (next) {
      this.open++;
      next(this.connect());
    }
  }

  private connect(): Socket {
    let socket: Socket;
    if (this.tls) {
      const tls: TLSSocket = tlsConnect({
        host: this.host,
        port: this.port,
        servername: isIP(this.host) ? undefined : this.host,
        ALPNProtocols: ['http/1.1'],
        session: this.session,
      });
      tls.on('session', (session: Buffer) => (this.session = session));
      socket = tls;
    } else socket = netConnect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1000);
    return socket;
  }

  private watch(socket: Socket): void {
    const gone = () => {
      this.unwatch(socket);
      const at = this.idle.indexOf(socket);
      if (at >= 0) {
        this.idle.splice(at, 1);
        this.open--;
      }
      drop(socket);
    };
    this.watches.set(socket, { gone });
    socket.on('close', gone);
    socket.on('error', gone);
    socket.on('data', gone);
    socket.on('end', gone);
    socket.on('timeout', gone);
    socket.setTimeout(this.limits.idleMs);
    // An idle socket does not keep the process alive (as Node's own Agent: a CLI run, a test).
    socket.unref();
  }

  private unwatch(socket: Socket): void {
    const watch = this.watches.get(socket);
    if (!watch) return;
    this.watches.delete(socket);
    socket.ref();
    socket.setTimeout(0);
    socket.off('close', watch.gone);
    socket.off('error', watch.gone);
    socket.off('data', watch.gone);
    socket.off('end', watch.gone);
    socket.off('timeout', watch.gone);
  }
}

const NO_CLAIM: SocketClaim = { cancel: () => undefined };

function ignore(): void {}

/**
 * Destroys a socket nobody listens to any more: an error it had already queued (a reset in the
 * same tick) must not reach an emitter with no `error` listener, which would end the process.
 */
function drop(socket: Socket): void {
  socket.on('error', ignore);
  socket.destroy();
}
