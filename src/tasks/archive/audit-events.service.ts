import { Inject, Injectable, Optional } from '@nestjs/common';
import { ARCHIVE, ENV_CONFIG } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import type { ArchivePort } from '../../archive/archive.port';
import type { ArchiveFilter } from '../../archive/store/archive-query';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { EventPage, eventView, EventView } from './task-audit.service';

/** What `GET /audit/events` narrows by (all optional; the tenant is always the caller's). */
export interface AuditQuery {
  taskId?: string;
  sessionId?: string;
  oid?: string;
  type?: string;
  since?: Date;
  until?: Date;
}

/** Pages an NDJSON export reads at most (1,000 events each): a larger export is cut, and its last line says where to go on. */
const MAX_EXPORT_PAGES = 1000;

/**
 * `GET /audit/events` (docs/archive.md): the archive's events of the caller's tenant, keyset-paged in
 * time order. A caller with the app role TA_AUDIT_ROLE reads the whole tenant's; anyone else only
 * the events of their own tasks (a filter on another person's `oid` is 403). Another tenant's
 * events are never read: the tenant is the caller's, always.
 */
@Injectable()
export class AuditEventsService {
  private readonly auditRole: string;

  constructor(
    @Inject(ENV_CONFIG) env: EnvConfig,
    @Optional() @Inject(ARCHIVE) private readonly archive?: ArchivePort | null,
  ) {
    this.auditRole = env.roles.audit;
  }

  async page(principal: Principal, roles: readonly string[], query: AuditQuery, page: { limit: number; cursor?: string }): Promise<EventPage> {
    const listed = await this.archiveOf().listEvents(this.filterOf(principal, roles, query), page);
    return { events: listed.items.map(eventView), next_cursor: listed.nextCursor ?? null };
  }

  /** Every matching event, page by page (bounded memory: one page at a time), for an NDJSON export. */
  async *export(principal: Principal, roles: readonly string[], query: AuditQuery): AsyncGenerator<EventView | { next_cursor: string }> {
    const filter = this.filterOf(principal, roles, query);
    let cursor: string | undefined;
    for (let n = 0; n < MAX_EXPORT_PAGES; n++) {
      const listed = await this.archiveOf().listEvents(filter, { limit: 1000, ...(cursor ? { cursor } : {}) });
      for (const e of listed.items) yield eventView(e);
      cursor = listed.nextCursor;
      if (!cursor) return;
    }
    if (cursor) yield { next_cursor: cursor };
  }

  private filterOf(principal: Principal, roles: readonly string[], query: AuditQuery): ArchiveFilter {
    const auditor = roles.includes(this.auditRole);
    if (!auditor && query.oid !== undefined && query.oid !== principal.ownerId) {
      throw new DomainError(ErrorCode.FORBIDDEN, `Reading another person's events needs the app role ${this.auditRole}`);
    }
    const ownerId = auditor ? query.oid : principal.ownerId;
    return {
      tenantId: principal.tenantId,
      ...(ownerId !== undefined ? { ownerId } : {}),
      ...(query.taskId !== undefined ? { taskId: query.taskId } : {}),
      ...(query.sessionId !== undefined ? { sessionId: query.sessionId } : {}),
      ...(query.type !== undefined ? { type: query.type } : {}),
      ...(query.since ? { since: query.since } : {}),
      ...(query.until ? { until: query.until } : {}),
    };
  }

  private archiveOf(): ArchivePort {
    if (!this.archive) throw new DomainError(ErrorCode.ROUTE_NOT_FOUND, 'No audit archive is configured on this server (TA_ARCHIVE_URL)');
    return this.archive;
  }
}
