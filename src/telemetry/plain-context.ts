import { Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';

/**
 * An OpenTelemetry context as a plain object: its methods on the prototype. OTel's own context
 * (`BaseContext`, the one ROOT_CONTEXT is) gives every context three closures over itself. In this
 * Node (V8 13), a per-request object reached from a closure made per request outlives V8's
 * young-generation collections: each request's contexts, and what they hold (its span, its log
 * context), were promoted to the old generation and left to the concurrent major GC (measured:
 * ~480 bytes promoted per `setValue` of OTel's context, none of this one; issue 27). Same meaning:
 * an immutable map of keys to values, `setValue` and `deleteValue` returning a new context.
 */
export class PlainContext implements Context {
  /**
   * One value on the context it was set on, not a copy of every value in a new Map: a context is
   * set a value at a time (the span, the log context), and a request makes several, each a Map
   * allocated and copied (~0.5 % of a turn; issue 27). A chain longer than MAX_DEPTH is folded.
   */
  private constructor(
    private readonly parent: PlainContext | undefined,
    private readonly key: symbol | undefined,
    private readonly value: unknown,
    private readonly depth: number,
  ) {}

  /** The empty context. */
  static empty(): PlainContext {
    return new PlainContext(undefined, undefined, undefined, 0);
  }

  getValue(key: symbol): unknown {
    return PlainContext.valueIn(this, key);
  }

  setValue(key: symbol, value: unknown): Context {
    return (this.depth < MAX_DEPTH ? this : PlainContext.folded(this)).with(key, value);
  }

  private static valueIn(start: PlainContext, key: symbol): unknown {
    for (let c: PlainContext | undefined = start; c !== undefined; c = c.parent) if (c.key === key) return c.value;
    return undefined;
  }

  /** A key deleted reads as one never set: undefined, as OTel's own context gives it. */
  deleteValue(key: symbol): Context {
    return this.setValue(key, undefined);
  }

  private with(key: symbol, value: unknown): PlainContext {
    return new PlainContext(this, key, value, this.depth + 1);
  }

  /** The same values as `start`, each key once (the newest value), on a fresh chain. */
  private static folded(start: PlainContext): PlainContext {
    const latest = new Map<symbol, unknown>();
    for (let c: PlainContext | undefined = start; c !== undefined; c = c.parent) if (c.key !== undefined && !latest.has(c.key)) latest.set(c.key, c.value);
    let out = PlainContext.empty();
    for (const [key, value] of latest) if (value !== undefined) out = out.with(key, value);
    return out;
  }
}

/** How many values a context's chain holds before it is folded (each key once). */
const MAX_DEPTH = 16;

/** The empty context every request's context starts from (in place of ROOT_CONTEXT). */
export const PLAIN_ROOT: Context = PlainContext.empty();

/**
 * The AsyncLocalStorage context manager, whose context outside any `with` is PLAIN_ROOT, so the
 * contexts made from the active one are plain ones too.
 */
export class PlainRootContextManager extends AsyncLocalStorageContextManager {
  override active(): Context {
    const active = super.active();
    return active === ROOT_CONTEXT ? PLAIN_ROOT : active;
  }
}
