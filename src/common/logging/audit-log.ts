import { Attributes, trace } from '@opentelemetry/api';
import { createWriteStream, WriteStream } from 'node:fs';
import type { Logger } from 'pino';
import { LogContext, LogFields } from './log-context';
import { isoNow } from '../time/iso-time';

/** What is audited (docs/operations.md, Audit log). */
export type AuditEvent =
  'auth.failed' | 'approval.approved' | 'approval.rejected' | 'approval.refined' | 'request.cancelled' | 'request.edited' | 'task.deleted' | 'session.deleted';

/** One audit record's own fields; the ids of the request being served (LogFields) are added from its log context. */
export interface AuditFields extends LogFields {
  /** The pause a decision decided. */
  pause_id?: string;
  /** The tool calls a decision approved or rejected. */
  tool_calls?: { id: string; name: string }[];
  /** `request.edited`: the request whose user turn was replaced (`request_id` is the new one). */
  edited_request_id?: string;
  /** Why: the refusal of an `auth.failed` (a fixed phrase, never token material), the reason given with a rejection. */
  reason?: string;
  /** `auth.failed`: the error code answered (UNAUTHENTICATED, FORBIDDEN). */
  code?: string;
  /** `auth.failed`: the tenant and user the refused token claims (unverified; only ever a GUID). */
  claimed_tid?: string;
  claimed_oid?: string;
  /** `request.cancelled`: the HTTP status answered (200 stopped here, 202 asked of the replica running it). */
  status?: number;
}

export interface AuditRecord extends AuditFields {
  audit: true;
  event: AuditEvent;
  /** ISO 8601 time of the event. */
  at: string;
  trace_id?: string;
}

/**
 * Bytes of audit lines the file may have queued (not yet written) before further lines are left
 * out of the file; the stdout line and the span event are still written.
 */
const MAX_PENDING_FILE_BYTES = 8 * 1024 * 1024;

/**
 * Security-relevant events as one documented record (AuditRecord): a log line at info with
 * `"audit": true`, an event on the active span (`audit {event}`), and, with `TA_AUDIT_LOG=<file>`,
 * the same record appended to that file as a JSON line. The file is opened once (append); a write
 * error is logged once and the file is given up, never failing the request being audited.
 * (No OTel log record: the app has no OTel logs SDK; the span event carries the same fields.)
 */
export class AuditLog {
  private file?: WriteStream;
  private fileFailed = false;
  private dropped = 0;

  constructor(
    private readonly logger: Logger,
    private readonly path?: string,
  ) {
    if (!path) return;
    this.file = createWriteStream(path, { flags: 'a' });
    this.file.on('error', (err) => this.giveUpFile(err));
  }

  record(event: AuditEvent, fields: AuditFields = {}): void {
    const span = trace.getActiveSpan();
    const record: AuditRecord = { audit: true, event, at: isoNow(), ...LogContext.active()?.fields };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) (record as unknown as Record<string, unknown>)[k] = v;
    if (span) record.trace_id = span.spanContext().traceId;
    this.logger.info(record, `audit ${event}`);
    span?.addEvent(`audit ${event}`, spanAttributes(record));
    this.writeFile(record);
  }

  /** Writes out what is queued and closes the file. */
  async close(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    if (file && !this.fileFailed) await new Promise<void>((resolve) => file.end(() => resolve()));
  }

  private writeFile(record: AuditRecord): void {
    if (!this.file || this.fileFailed) return;
    if (this.file.writableLength > MAX_PENDING_FILE_BYTES) {
      if (this.dropped++ === 0)
        this.logger.warn({ audit_log: this.path }, 'audit log file is not keeping up: audit lines are left out of it (still on stdout)');
      return;
    }
    this.file.write(`${JSON.stringify(record)}\n`);
  }

  private giveUpFile(err: Error): void {
    if (this.fileFailed) return;
    this.fileFailed = true;
    this.logger.error({ err, audit_log: this.path }, 'cannot write the audit log file (TA_AUDIT_LOG): audit lines go to stdout only');
  }
}

/** Span event attributes are flat: the calls become two parallel arrays. */
function spanAttributes(record: AuditRecord): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(record)) {
    if (k === 'tool_calls' || k === 'audit') continue;
    if (typeof v === 'string' || typeof v === 'number') out[`ta.audit.${k}`] = v;
  }
  if (record.tool_calls) {
    out['ta.audit.tool_call_ids'] = record.tool_calls.map((c) => c.id);
    out['ta.audit.tool_call_names'] = record.tool_calls.map((c) => c.name);
  }
  return out;
}
