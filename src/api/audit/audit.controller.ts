import { Controller, Get, Headers, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { CallerRoles, CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { ARCHIVE_EVENT_TYPES } from '../../archive/archive-event';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { AuditEventsService, AuditQuery } from '../../tasks/archive/audit-events.service';
import { parsePageSize } from '../v3/params';

const NDJSON = 'application/x-ndjson';

/**
 * `GET /audit/events` (docs/archive.md): the audit archive's events of the caller's tenant, the
 * caller's own unless it holds the app role TA_AUDIT_ROLE. JSON pages (`cursor`, `limit` up to
 * 1000), or, with `Accept: application/x-ndjson`, every matching event as one JSON line each.
 */
@Controller('audit')
export class AuditController {
  constructor(private readonly events: AuditEventsService) {}

  @Get('events')
  async list(
    @Query() raw: Record<string, unknown>,
    @Headers('accept') accept: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @CallerRoles() roles: readonly string[],
    @Res() res: Response,
  ): Promise<void> {
    const query = parseQuery(raw);
    if (accept?.includes(NDJSON)) {
      const lines = this.events.export(principal, roles, query);
      // The first page is read before the status goes out, so a refusal is still a problem+json.
      const first = await lines.next();
      res.status(200).type(NDJSON);
      if (!first.done) res.write(`${JSON.stringify(first.value)}\n`);
      try {
        for await (const line of lines) if (!res.write(`${JSON.stringify(line)}\n`)) await new Promise((r) => res.once('drain', r));
      } finally {
        res.end();
      }
      return;
    }
    const limit = parsePageSize(typeof raw.limit === 'string' ? raw.limit : undefined, 100, 1000);
    const cursor = typeof raw.cursor === 'string' ? raw.cursor : undefined;
    res.status(200).json(await this.events.page(principal, roles, query, { limit, ...(cursor !== undefined ? { cursor } : {}) }));
  }
}

function parseQuery(raw: Record<string, unknown>): AuditQuery {
  const text = (name: string): string | undefined => {
    const v = raw[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !v || v.length > 256) throw invalid(name, `${name} must be one non-empty value of at most 256 characters`);
    return v;
  };
  const time = (name: string): Date | undefined => {
    const v = text(name);
    if (v === undefined) return undefined;
    const d = new Date(v);
    if (!/^\d{4}-\d\d-\d\d/.test(v) || Number.isNaN(d.getTime())) throw invalid(name, `${name} must be an ISO 8601 time`);
    return d;
  };
  const type = text('type');
  if (type !== undefined && !(ARCHIVE_EVENT_TYPES as readonly string[]).includes(type))
    throw invalid('type', `type must be one of ${ARCHIVE_EVENT_TYPES.join(', ')}`);
  const q: AuditQuery = { taskId: text('task_id'), sessionId: text('session_id'), oid: text('oid'), type, since: time('since'), until: time('until') };
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined)) as AuditQuery;
}

function invalid(field: string, message: string): DomainError {
  return new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field, message }] });
}
