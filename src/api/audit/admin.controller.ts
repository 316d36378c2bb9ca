import { Controller, Delete, Inject, Param, Res } from '@nestjs/common';
import type { Response } from 'express';
import { ENV_CONFIG } from '../../app.tokens';
import { CallerRoles, CurrentPrincipal } from '../../auth/current-principal.decorator';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { EnvConfig } from '../../config/env.config';
import { PrincipalErasureService } from '../../tasks/archive/principal-erasure.service';

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
    @Inject(ENV_CONFIG) env: EnvConfig,
  ) {
    this.adminRole = env.roles.admin;
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
