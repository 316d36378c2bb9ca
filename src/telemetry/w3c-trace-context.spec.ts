import { defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { parseTraceParent, W3CTraceContext } from './w3c-trace-context';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';

describe('W3C Trace Context (traceparent, tracestate)', () => {
  it.each([
    [`00-${TRACE}-${SPAN}-01`, { traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true }],
    [`00-${TRACE}-${SPAN}-00`, { traceId: TRACE, spanId: SPAN, traceFlags: 0, isRemote: true }],
    // A later version may carry more parts.
    [`01-${TRACE}-${SPAN}-01-more`, { traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true }],
    [` 00-${TRACE}-${SPAN}-01 `, { traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true }],
  ])('reads %j', (header, expected) => {
    expect(parseTraceParent(header)).toEqual(expected);
  });

  it.each([
    `ff-${TRACE}-${SPAN}-01`,
    `00-${'0'.repeat(32)}-${SPAN}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE}-${SPAN}-01-extra`,
    `00-${TRACE.toUpperCase()}-${SPAN}-01`,
    `00-${TRACE}-${SPAN}`,
    'garbage',
    '',
  ])('refuses %j', (header) => {
    expect(parseTraceParent(header)).toBeUndefined();
  });

  it('extracts the caller as a remote parent with its tracestate, and injects a span context back in the same form', () => {
    const propagator = new W3CTraceContext();
    const ctx = propagator.extract(ROOT_CONTEXT, { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'a=1, b=2' }, defaultTextMapGetter);
    const span = trace.getSpanContext(ctx)!;
    expect(span).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    expect(span.traceState?.get('b')).toBe('2');
    const carrier: Record<string, string> = {};
    propagator.inject(ctx, carrier, defaultTextMapSetter);
    expect(carrier).toEqual({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'a=1,b=2' });
    expect(propagator.extract(ROOT_CONTEXT, { traceparent: 'nonsense' }, defaultTextMapGetter)).toBe(ROOT_CONTEXT);
  });
});
