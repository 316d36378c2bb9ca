import {
  Context,
  createTraceState,
  isSpanContextValid,
  SpanContext,
  TextMapGetter,
  TextMapPropagator,
  TextMapSetter,
  trace,
  TraceFlags,
} from '@opentelemetry/api';

const TRACE_PARENT = 'traceparent';
const TRACE_STATE = 'tracestate';
/** W3C Trace Context: version (not ff), trace id (not all zeros), parent id (not all zeros), flags; later versions may add parts. */
const TRACE_PARENT_FORMAT = /^\s?((?!ff)[\da-f]{2})-((?![0]{32})[\da-f]{32})-((?![0]{16})[\da-f]{16})-([\da-f]{2})(-.*)?\s?$/;

/** A `traceparent` header's span context, or undefined when it is not one (version 00 takes exactly four parts). */
export function parseTraceParent(header: string): SpanContext | undefined {
  const match = TRACE_PARENT_FORMAT.exec(header);
  if (!match || (match[1] === '00' && match[5])) return undefined;
  return { traceId: match[2]!, spanId: match[3]!, traceFlags: parseInt(match[4]!, 16), isRemote: true };
}

/**
 * The W3C Trace Context propagator (`traceparent`, `tracestate`), as @opentelemetry/core's
 * W3CTraceContextPropagator reads and writes them (the same format checks, `tracestate` parsed by the
 * API's own TraceState), without core: its index loads the semantic conventions, ~400 KB of code a
 * server that exports nothing never needs (issue 27, start-up). With an exporter, core is loaded by
 * the SDK as before.
 */
export class W3CTraceContext implements TextMapPropagator {
  inject(ctx: Context, carrier: unknown, setter: TextMapSetter): void {
    const span = trace.getSpanContext(ctx);
    if (!span || !isSpanContextValid(span)) return;
    setter.set(carrier, TRACE_PARENT, `00-${span.traceId}-${span.spanId}-0${Number(span.traceFlags || TraceFlags.NONE).toString(16)}`);
    if (span.traceState) setter.set(carrier, TRACE_STATE, span.traceState.serialize());
  }

  extract(ctx: Context, carrier: unknown, getter: TextMapGetter): Context {
    const header = getter.get(carrier, TRACE_PARENT);
    const traceParent = Array.isArray(header) ? header[0] : header;
    if (typeof traceParent !== 'string' || !traceParent) return ctx;
    const span = parseTraceParent(traceParent);
    if (!span) return ctx;
    const state = getter.get(carrier, TRACE_STATE);
    if (state) {
      const joined = Array.isArray(state) ? state.join(',') : state;
      if (typeof joined === 'string') span.traceState = createTraceState(joined);
    }
    return trace.setSpanContext(ctx, span);
  }

  fields(): string[] {
    return [TRACE_PARENT, TRACE_STATE];
  }
}
