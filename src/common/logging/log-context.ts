import { Context, context, createContextKey, Span } from '@opentelemetry/api';
import { hash } from 'node:crypto';

/**
 * The correlation ids every log line of a request carries (docs/operations.md, Logs). `request_id`
 * is the API's id (v3: the Request of a Task); the HTTP-level `X-Request-Id` is `http_request_id`.
 */
export interface LogFields {
  http_request_id?: string;
  /** `"{name}:{version}"` of the agent whose route serves the request. */
  agent?: string;
  /** The caller's tenant (`tid`). */
  tid?: string;
  /** The caller's `oid`, hashed (oidHash): lines can be joined per caller without carrying the id itself. */
  oid_hash?: string;
  session_id?: string;
  task_id?: string;
  request_id?: string;
}

/** The same ids as span attributes (`agent` and `http_request_id` already have theirs: `ta.agent.*`, `ta.http.request_id`). */
const SPAN_ATTRIBUTES: Partial<Record<keyof LogFields, string>> = {
  tid: 'ta.tid',
  oid_hash: 'ta.oid_hash',
  session_id: 'ta.session_id',
  task_id: 'ta.task_id',
  request_id: 'ta.request_id',
};

const LOG_CONTEXT_KEY = createContextKey('teal-agent-server.log_context');

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's log context (set by its telemetry): guards run before the interceptor enters its async context. */
    logContext?: LogContext;
  }
}

/**
 * The ids of the work being done, carried in the (AsyncLocalStorage-based) OTel context and merged
 * into every pino line by the logger's mixin. One mutable object per HTTP request, filled in as the
 * ids become known (the agent when the route matched, the caller once authenticated, the task and
 * request once admitted), so lines logged before and after, the `request completed` line included,
 * all carry what is known by then. A run that outlives or is not its HTTP request (a handed-over
 * follow-on) gets a context of its own (`fork`), so it never rewrites another request's ids.
 */
export class LogContext {
  readonly fields: LogFields = {};

  constructor(
    fields: LogFields,
    private readonly span?: Span,
  ) {
    this.set(fields);
  }

  /** The log context of the active async context, if any. */
  static active(): LogContext | undefined {
    return context.active().getValue(LOG_CONTEXT_KEY) as LogContext | undefined;
  }

  /** Adds ids (undefined ones are skipped) to the lines from now on and to the span. */
  set(more: LogFields): void {
    for (const key of Object.keys(more) as (keyof LogFields)[]) {
      const value = more[key];
      if (value === undefined) continue;
      this.fields[key] = value;
      const attribute = SPAN_ATTRIBUTES[key];
      if (attribute) this.span?.setAttribute(attribute, value);
    }
  }

  /** `ctx` carrying this log context. */
  in(ctx: Context): Context {
    return ctx.setValue(LOG_CONTEXT_KEY, this);
  }

  /** A new context with this one's ids and `more`, its span attributes set on `span`. */
  fork(more: LogFields, span?: Span): LogContext {
    return new LogContext({ ...this.fields, ...more }, span);
  }
}

/**
 * The caller's `oid` as logged: the first 16 hex digits of its SHA-256. Unsalted on purpose, so the
 * same caller has the same hash on every replica and across restarts (lines join per caller); it is
 * a pseudonym, not a secret: whoever knows an oid can compute its hash. Computed once per request.
 */
export function oidHash(oid: string): string {
  let hashed = oidHashes.get(oid);
  if (hashed === undefined) {
    // A bounded memo: a caller's turns come one after another, and a hash object per request
    // showed in the profile. Emptied when full, so a flood of distinct oids holds little memory.
    if (oidHashes.size >= OID_HASHES_KEPT) oidHashes.clear();
    hashed = hash('sha256', oid, 'hex').slice(0, 16);
    oidHashes.set(oid, hashed);
  }
  return hashed;
}

const OID_HASHES_KEPT = 4096;
const oidHashes = new Map<string, string>();

/** The caller's fields of a log line. */
export function callerFields(principal: { tenantId: string; ownerId: string }): Pick<LogFields, 'tid' | 'oid_hash'> {
  return { tid: principal.tenantId, oid_hash: oidHash(principal.ownerId) };
}
