import { ROOT_CONTEXT } from '@opentelemetry/api';
import { keptBytesEach } from '../../test/support/kept-heap';
import { UnexportedTracer } from './unexported-tracer';

describe('UnexportedTracer ids', () => {
  const tracer = new UnexportedTracer();

  it('gives a root span a new trace id (32 hex digits) and every span a new span id (16)', () => {
    const ids = Array.from({ length: 2000 }, () => tracer.startSpan('x', undefined, ROOT_CONTEXT).spanContext());
    expect(ids.filter((c) => !/^[0-9a-f]{32}$/.test(c.traceId) || !/^[0-9a-f]{16}$/.test(c.spanId))).toEqual([]);
    expect(new Set(ids.map((c) => c.traceId)).size).toBe(ids.length);
    expect(new Set(ids.map((c) => c.spanId)).size).toBe(ids.length);
  });

  it('makes each id one flat string: ~50 bytes of heap a kept trace id, not a tree of ~30 strings', () => {
    const perId = keptBytesEach(() => tracer.startSpan('x', undefined, ROOT_CONTEXT).spanContext().traceId, 50_000);
    expect(perId).toBeLessThan(120); // appended a digit at a time: ~700 bytes each
  });
});
