import { context } from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { HttpRequestTelemetry } from './http-request-telemetry';
import { Telemetry } from './telemetry';

/**
 * Starts the telemetry of every request before anything else can fail it. Registered right after the
 * request-id middleware: a 404, a 413 from the body parser or a 415 never reaches Nest's interceptors,
 * yet still gets its SERVER span, its metrics and its log line.
 */
export function httpTelemetryMiddleware(telemetry: Telemetry, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const t = HttpRequestTelemetry.for(telemetry, logger, req, res);
    context.with(t.context, next);
  };
}
