import type { Request, Response } from 'express';
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { promotedBytesEach } from '../../test/support/kept-heap';
import { HttpRequestTelemetry } from './http-request-telemetry';
import { Telemetry } from './telemetry';

/** A request and response as Express hands them to the first middleware (what the telemetry reads). */
function exchange(i: number): { req: Request; res: Response } {
  const res = Object.assign(new EventEmitter(), { statusCode: 200, writableFinished: true, setHeader: () => undefined });
  const req = {
    method: 'GET',
    path: `/x/${i}`,
    originalUrl: `/x/${i}`,
    protocol: 'http',
    headers: { 'user-agent': 'test' },
    requestId: `r${i}`,
    body: 'b'.repeat(200),
  };
  return { req: req as unknown as Request, res: res as unknown as Response };
}

describe('HttpRequestTelemetry', () => {
  const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });
  const logger = pino({ level: 'silent' });

  it('is one per request: found again for the same request, started afresh for another', () => {
    const a = exchange(1);
    const first = HttpRequestTelemetry.for(telemetry, logger, a.req, a.res);
    expect(HttpRequestTelemetry.for(telemetry, logger, a.req, a.res)).toBe(first);
    expect(HttpRequestTelemetry.of(a.req)).toBe(first);
    const b = exchange(2);
    expect(HttpRequestTelemetry.of(b.req)).toBeUndefined();
    expect(HttpRequestTelemetry.for(telemetry, logger, b.req, b.res)).not.toBe(first);
  });

  it("leaves nothing of a finished request to the old generation (a WeakMap keyed by requests kept each one's objects through the young collections)", () => {
    let i = 0;
    const promoted = promotedBytesEach(() => {
      const { req, res } = exchange(i++);
      HttpRequestTelemetry.for(telemetry, logger, req, res);
      res.emit('close');
    }, 3000);
    // Measured: ~1,900 bytes each with the WeakMap, ~0 with the property.
    expect(promoted).toBeLessThan(300);
  });
});
