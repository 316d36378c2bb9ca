import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Telemetry } from '../../telemetry/telemetry';
import { AuditLog } from './audit-log';
import { LogContext } from './log-context';
import { createLogger } from './logger';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger('info', destination), lines };
}

const flushed = () => new Promise((r) => setTimeout(r, 20));

describe('AuditLog', () => {
  // Installs the async context manager the app runs with.
  const telemetry = new Telemetry({ serviceName: 'test', serviceVersion: '0' });
  afterAll(() => telemetry.shutdown());

  it('writes one record, with the ids of the log context, as an info line and as a line of the file', async () => {
    const { logger, lines } = capture();
    const path = join(mkdtempSync(join(tmpdir(), 'ta-audit-spec-')), 'audit.jsonl');
    const audit = new AuditLog(logger, path);
    const log = new LogContext({ http_request_id: 'h-1', agent: 'A:1', tid: 't-1', oid_hash: 'abcd' });
    context.with(log.in(ROOT_CONTEXT), () => audit.record('task.deleted', { task_id: 'task-1', session_id: 's-1', reason: undefined }));
    await audit.close();
    await flushed();
    const expected = {
      audit: true,
      event: 'task.deleted',
      at: expect.any(String),
      http_request_id: 'h-1',
      agent: 'A:1',
      tid: 't-1',
      oid_hash: 'abcd',
      task_id: 'task-1',
      session_id: 's-1',
    };
    expect(lines).toEqual([expect.objectContaining({ level: 'info', msg: 'audit task.deleted', ...expected })]);
    const file = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown);
    expect(file).toEqual([expected]);
    expect(file[0]).not.toHaveProperty('reason');
  });

  it('logs a file it cannot write once, and keeps auditing to stdout without throwing', async () => {
    const { logger, lines } = capture();
    const audit = new AuditLog(logger, join(tmpdir(), 'no-such-dir-for-audit', 'x', 'audit.jsonl'));
    audit.record('session.deleted', { session_id: 's-1' });
    await flushed();
    audit.record('session.deleted', { session_id: 's-2' });
    audit.record('session.deleted', { session_id: 's-3' });
    await audit.close();
    await flushed();
    expect(lines.filter((l) => l.level === 'error')).toEqual([expect.objectContaining({ msg: expect.stringContaining('cannot write the audit log file') })]);
    expect(lines.filter((l) => l.audit === true).map((l) => l.session_id)).toEqual(['s-1', 's-2', 's-3']);
  });

  it('adds the record as an event of the active span, with the trace id on the line', async () => {
    const { logger, lines } = capture();
    const audit = new AuditLog(logger);
    // Spans record events only when exported (src/telemetry/unexported-tracer.ts): this one keeps what it is given.
    const events: { name: string; attributes: Record<string, unknown> }[] = [];
    const span = Object.assign(telemetry.startServerSpan('POST /x', ROOT_CONTEXT, {}), {
      addEvent(name: string, attributes: Record<string, unknown>) {
        events.push({ name, attributes });
        return this;
      },
    });
    context.with(trace.setSpan(ROOT_CONTEXT, span), () =>
      audit.record('approval.rejected', { task_id: 't-1', pause_id: 'p-1', tool_calls: [{ id: 'c1', name: 'Notes-wipe' }], reason: 'no' }),
    );
    span.end();
    await flushed();
    expect(events).toEqual([
      expect.objectContaining({
        name: 'audit approval.rejected',
        attributes: expect.objectContaining({
          'ta.audit.event': 'approval.rejected',
          'ta.audit.task_id': 't-1',
          'ta.audit.pause_id': 'p-1',
          'ta.audit.reason': 'no',
          'ta.audit.tool_call_ids': ['c1'],
          'ta.audit.tool_call_names': ['Notes-wipe'],
        }),
      }),
    ]);
    expect(lines[0]).toMatchObject({ audit: true, trace_id: span.spanContext().traceId });
  });
});
