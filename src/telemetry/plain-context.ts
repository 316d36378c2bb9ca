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
  constructor(private readonly values: ReadonlyMap<symbol, unknown>) {}

  getValue(key: symbol): unknown {
    return this.values.get(key);
  }

  setValue(key: symbol, value: unknown): Context {
    const values = new Map(this.values);
    values.set(key, value);
    return new PlainContext(values);
  }

  deleteValue(key: symbol): Context {
    const values = new Map(this.values);
    values.delete(key);
    return new PlainContext(values);
  }
}

/** The empty context every request's context starts from (in place of ROOT_CONTEXT). */
export const PLAIN_ROOT: Context = new PlainContext(new Map());

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
