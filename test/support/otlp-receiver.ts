import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { buffer as readBuffer } from 'node:stream/consumers';
import { gunzipSync } from 'node:zlib';

/**
 * A real OTLP/HTTP receiver for tests: `POST /v1/traces` and `POST /v1/metrics` with JSON bodies
 * (`Content-Type: application/json`, the encoding our exporters are configured for). It keeps every
 * span and metric data point, flattened to plain objects, and answers as a collector does (200 `{}`).
 * A protobuf or otherwise unreadable export is answered 415 and recorded in `rejected`, so a
 * misconfigured exporter makes the test fail instead of silently exporting nothing.
 */

export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [k: string]: AttributeValue };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, AttributeValue>;
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  resource: Record<string, AttributeValue>;
  scope: string;
}

export interface ReceivedMetricPoint {
  metric: string;
  unit?: string;
  type: 'sum' | 'gauge' | 'histogram' | 'exponentialHistogram' | 'summary';
  attributes: Record<string, AttributeValue>;
  /** Sum and gauge points. */
  value?: number;
  /** Histogram points. */
  count?: number;
  sum?: number;
  resource: Record<string, AttributeValue>;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
export const SPAN_STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export interface OtlpReceiver {
  /** Base URL to give as `TA_OTEL_ENDPOINT` (no trailing slash). */
  url: string;
  spans(): ReceivedSpan[];
  metricPoints(): ReceivedMetricPoint[];
  /** Every export request received: path and content type. */
  requests(): { path: string; contentType: string }[];
  /** Exports refused because they were not OTLP JSON (path, content type, reason). */
  rejected(): { path: string; contentType: string; reason: string }[];
  /** Resolves when `predicate` holds on the data received so far; rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, description: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: string;
}
interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

function anyValue(v: OtlpAnyValue | undefined): AttributeValue {
  if (!v) return null;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(anyValue);
  if (v.kvlistValue) return attributes(v.kvlistValue.values);
  if (v.bytesValue !== undefined) return v.bytesValue;
  return null;
}

export function attributes(kvs: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, anyValue(kv.value)]));
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function collectSpans(body: any, out: ReceivedSpan[]): void {
  for (const rs of body.resourceSpans ?? []) {
    const resource = attributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          startTimeUnixNano: String(s.startTimeUnixNano),
          endTimeUnixNano: String(s.endTimeUnixNano),
          attributes: attributes(s.attributes),
          status: { code: s.status?.code ?? 0, message: s.status?.message },
          events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributes(e.attributes) })),
          resource,
          scope: ss.scope?.name ?? '',
        });
      }
    }
  }
}

const num = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

function collectMetrics(body: any, out: ReceivedMetricPoint[]): void {
  for (const rm of body.resourceMetrics ?? []) {
    const resource = attributes(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        for (const type of ['sum', 'gauge', 'histogram', 'exponentialHistogram', 'summary'] as const) {
          for (const p of m[type]?.dataPoints ?? []) {
            out.push({
              metric: m.name,
              unit: m.unit,
              type,
              attributes: attributes(p.attributes),
              value: num(p.asInt ?? p.asDouble),
              count: num(p.count),
              sum: num(p.sum),
              resource,
            });
          }
        }
      }
    }
  }
}
/* eslint-enable @typescript-eslint/no-explicit-any */

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedMetricPoint[] = [];
  const requests: { path: string; contentType: string }[] = [];
  const rejected: { path: string; contentType: string; reason: string }[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '').split('?')[0]!;
    const contentType = String(req.headers['content-type'] ?? '');
    let raw = await readBuffer(req);
    if (req.method !== 'POST' || (path !== '/v1/traces' && path !== '/v1/metrics')) {
      res.writeHead(404).end();
      return;
    }
    requests.push({ path, contentType });
    const refuse = (reason: string) => {
      rejected.push({ path, contentType, reason });
      res.writeHead(415, { 'content-type': 'application/json' }).end(JSON.stringify({ message: reason }));
    };
    if (!/^application\/json\b/i.test(contentType)) return refuse('only OTLP/HTTP JSON is accepted');
    if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch (e) {
      return refuse(`body is not JSON: ${(e as Error).message}`);
    }
    if (path === '/v1/traces') collectSpans(body, spans);
    else collectMetrics(body, points);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: Error) => res.writeHead(500).end(e.message));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    metricPoints: () => [...points],
    requests: () => [...requests],
    rejected: () => [...rejected],
    async waitFor(predicate, description, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`OTLP receiver: timed out after ${timeoutMs} ms waiting for ${description}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
