import { Context, context as contextApi, Span, SpanOptions, trace, TraceFlags, Tracer } from '@opentelemetry/api';
import { randomHex } from '../common/ids/uuid.util';

/**
 * The tracer when no span is exported (no `TA_OTEL_ENDPOINT`): every span has its ids, its parent
 * and its sampled flag exactly as the SDK's would (a child keeps its parent's trace id and flags; a
 * root is a new trace, sampled, as the SDK's default ParentBased(AlwaysOn) sampler decides), so
 * the trace and span ids of log lines and the `traceresponse` header are the same; but nothing is
 * recorded (names, attributes, events, times), since nothing would
 * ever read them. The SDK's recording span was ~5 % of a v3 turn's CPU for spans that were then
 * dropped (`npm run bench`'s profile: sdk-trace, core's attribute cleaning and clocks; issue 27).
 * With an endpoint, the SDK's tracer records and exports as before (src/telemetry/telemetry.ts).
 */
export class UnexportedTracer implements Tracer {
  startSpan(_name: string, _options?: SpanOptions, ctx: Context = contextApi.active()): Span {
    const parent = trace.getSpanContext(ctx);
    const valid = parent !== undefined && trace.isSpanContextValid(parent);
    return trace.wrapSpanContext({
      traceId: valid ? parent.traceId : randomHex(16),
      spanId: randomHex(8),
      traceFlags: valid ? parent.traceFlags : TraceFlags.SAMPLED,
      ...(valid && parent.traceState ? { traceState: parent.traceState } : {}),
    });
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, ctx: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : undefined;
    const ctx = rest.length > 2 ? (rest[1] as Context) : contextApi.active();
    const span = this.startSpan(name, options, ctx);
    return contextApi.with(trace.setSpan(ctx, span), fn as (span: Span) => ReturnType<F>, undefined, span);
  }
}
