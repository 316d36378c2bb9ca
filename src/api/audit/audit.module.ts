import { DynamicModule, Module } from '@nestjs/common';
import { TasksModule } from '../../tasks/tasks.module';
import { AdminController } from './admin.controller';
import { AuditController } from './audit.controller';

/**
 * `GET /audit/events`, registered only with an audit archive (TA_ARCHIVE_URL; otherwise the path is
 * a plain 404), and `DELETE /admin/principals/{oid}`, always (without an archive it erases the live store only).
 */
@Module({})
export class AuditModule {
  static register(enabled: boolean): DynamicModule {
    return { module: AuditModule, imports: [TasksModule], controllers: enabled ? [AuditController, AdminController] : [AdminController] };
  }
}
