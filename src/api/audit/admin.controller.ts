import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ENV_CONFIG } from '../../app.tokens';
import { CallerRoles, CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { PrincipalErasureService } from '../../tasks/archive/principal-erasure.service';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../tasks/task-query.service';
import { WebhookAdminService } from '../../tasks/webhooks/webhook-admin.service';
import { parsePageSize } from '../v3/params';

/** The longest oid accepted (an Entra oid is a 36-character GUID; dev-mode user ids are shorter). */
const MAX_OID = 128;

/**
 * `DELETE /admin/principals/{oid}` (docs/archive.md, Erasure): erases a person from the caller's
 * tenant — their live tasks and sessions and, with an archive, their archive rows, leaving one
 * content-free `principal_erased` row. Only for a caller with the app role TA_ADMIN_ROLE (else 403).
 * 200 `completed`, or 202 `in_progress` when more is left than one call does: call again.
 * Registered with or without an archive (without one it erases the live store only).
 */
@Controller('admin')
export class AdminController {
  private readonly adminRole: string;

  constructor(
    private readonly erasure: PrincipalErasureService,
    private readonly webhooks: WebhookAdminService,
    @Inject(ENV_CONFIG) env: EnvConfig,
  ) {
    this.adminRole = env.roles.admin;
  }

  /**
   * The tenant's webhook deliveries that wait (`status=pending`) or are dead (`status=failed`), or
   * both without `status` (docs/webhooks.md, "Delivery"). Paged through `next_cursor`.
   */
  @Get('webhooks/deliveries')
  deliveries(
    @Query('status') status: unknown,
    @Query('limit') limit: string | undefined,
    @Query('cursor') cursor: string | undefined,
    @CurrentPrincipal() principal: Principal,
    @CallerRoles() roles: readonly string[],
  ) {
    this.requireAdmin(roles, 'Listing webhook deliveries');
    if (status !== undefined && status !== 'pending' && status !== 'failed') {
      const message = 'status must be pending or failed';
      throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'status', message }] });
    }
    const page = { limit: parsePageSize(limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE), ...(cursor !== undefined ? { cursor } : {}) };
    return this.webhooks.list(principal.tenantId, status, page);
  }

  /** 202: the delivery is due again now (a fresh retry window) and under way. */
  @Post('webhooks/deliveries/:id/redeliver')
  @HttpCode(202)
  redeliver(@Param('id') id: string, @CurrentPrincipal() principal: Principal, @CallerRoles() roles: readonly string[]) {
    this.requireAdmin(roles, 'Redelivering a webhook');
    return this.webhooks.redeliver(principal.tenantId, id);
  }

  private requireAdmin(roles: readonly string[], what: string): void {
    if (!roles.includes(this.adminRole)) throw new DomainError(ErrorCode.FORBIDDEN, `${what} needs the app role ${this.adminRole}`);
  }

  @Delete('principals/:oid')
  async erase(
    @Param('oid') oid: string,
    @CurrentPrincipal() principal: Principal,
    @CallerRoles() roles: readonly string[],
    @Res() res: Response,
  ): Promise<void> {
    if (!roles.includes(this.adminRole)) throw new DomainError(ErrorCode.FORBIDDEN, `Erasing a person needs the app role ${this.adminRole}`);
    if (!oid.trim() || oid.length > MAX_OID) {
      const message = `oid must be a non-empty id of at most ${MAX_OID} characters`;
      throw new DomainError(ErrorCode.VALIDATION_FAILED, message, { errors: [{ field: 'oid', message }] });
    }
    const outcome = await this.erasure.erase(principal.tenantId, oid);
    res.status(outcome.status === 'completed' ? 200 : 202).json({
      oid: outcome.oid,
      status: outcome.status,
      tasks_deleted: outcome.tasksDeleted,
      events_deleted: outcome.eventsDeleted,
      ...(outcome.auditEventId ? { audit_event_id: outcome.auditEventId } : {}),
    });
  }
}
