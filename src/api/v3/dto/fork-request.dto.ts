import { IsOptional } from '../../../common/validation/class-validator-parts';
import { IsClientId } from '../client-id';
import { IsServerId } from '../server-id';

/** `{request_id?, session_id?}` of `POST /tasks/{task_id}/fork` (docs/api.md, Edit and fork). */
export class ForkRequestDto {
  /** The last request the fork holds (default: every completed request). */
  @IsOptional() @IsServerId('request_id') request_id?: string;
  /** The new task's session (default: the source's). */
  @IsOptional() @IsClientId('session_id') session_id?: string;
}
