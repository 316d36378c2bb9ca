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

/**
 * Who hears a socket's events now: the call using it (http-exchange.ts), or the pool keeping it
 * idle, for which any event (its peer closing it, an error, bytes nobody asked for, the idle
 * timeout) means the socket is gone.
 */
export interface SocketUser {
  onData(chunk: Buffer): void;
  onEnd(): void;
  onError(err: Error): void;
  onClose(): void;
}

const USER = Symbol("the socket's user");
const IDLE = Symbol("the socket's idle watch");

/**
 * A socket of the pool: its listeners, added once when it connects, pass each event to its user
 * of the moment. A call and an idle spell used to add and remove their own (nine listeners on and
 * off, a closure and a WeakMap entry per model call; issue 27).
 */
type PooledSocket = Socket & { [USER]?: SocketUser; [IDLE]: SocketUser };

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

  /** `user` hears the events of `socket`, a socket this pool handed out, until `release`. */
  static use(socket: Socket, user: SocketUser): void {
    (socket as PooledSocket)[USER] = user;
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
    (socket as PooledSocket)[USER] = undefined;
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
    const pooled = socket as PooledSocket;
    const gone = () => this.gone(pooled);
    pooled[USER] = undefined;
    pooled[IDLE] = { onData: gone, onEnd: gone, onError: gone, onClose: gone };
    socket.on('data', (chunk: Buffer) => pooled[USER]?.onData(chunk));
    socket.on('end', () => pooled[USER]?.onEnd());
    // Always heard (an error with no user is the end of a socket nobody uses): never an unhandled 'error'.
    socket.on('error', (err: Error) => pooled[USER]?.onError(err));
    socket.on('close', () => pooled[USER]?.onClose());
    socket.on('timeout', () => {
      if (pooled[USER] === pooled[IDLE]) gone();
    });
    return socket;
  }

  /** An idle socket its peer closed, that erred, sent unasked bytes or timed out: out of the pool. */
  private gone(socket: PooledSocket): void {
    this.unwatch(socket);
    const at = this.idle.indexOf(socket);
    if (at >= 0) {
      this.idle.splice(at, 1);
      this.open--;
    }
    drop(socket);
  }

  private watch(socket: Socket): void {
    const pooled = socket as PooledSocket;
    pooled[USER] = pooled[IDLE];
    socket.setTimeout(this.limits.idleMs);
    // An idle socket does not keep the process alive (as Node's own Agent: a CLI run, a test).
    socket.unref();
  }

  private unwatch(socket: Socket): void {
    const pooled = socket as PooledSocket;
    if (pooled[USER] !== pooled[IDLE]) return;
    pooled[USER] = undefined;
    socket.ref();
    socket.setTimeout(0);
  }
}

const NO_CLAIM: SocketClaim = { cancel: () => undefined };

/**
 * Destroys a socket of the pool. An error it had already queued (a reset in the same tick) reaches
 * the `error` listener every pooled socket keeps from its connect, with no user: it ends there.
 */
function drop(socket: Socket): void {
  socket.destroy();
}
