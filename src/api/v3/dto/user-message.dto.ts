import { Type } from 'class-transformer';
import { ArrayMinSize, IsArray, IsOptional, IsString, ValidateNested } from '../../../common/validation/class-validator-parts';
import { IsStringRecord } from '../../../agents/config/validators';
import { MultiModalItemDto } from '../../common/dto/multi-modal-item.dto';
import { IsClientId } from '../client-id';

/** `UserMessage {session_id?, task_id?, items[], user_context?}` (API.md §3). */
export class UserMessageDto {
  /** Any id the caller chooses (src/api/v3/client-id.ts); a new one is minted when absent. */
  @IsOptional() @IsClientId('session_id') session_id?: string;
  /** An existing task to follow on, or a new task to create under this id (upstream's behaviour). */
  @IsOptional() @IsClientId('task_id') task_id?: string;

  @IsArray({ message: 'items must be an array' })
  @ArrayMinSize(1, { message: 'items must hold at least one item' })
  @ValidateNested({ each: true })
  @Type(() => MultiModalItemDto)
  items!: MultiModalItemDto[];

  @IsOptional()
  @IsStringRecord({ message: 'user_context must be a map of strings' })
  user_context?: Record<string, string>;

  /**
   * Where this request's events are POSTed (docs/webhooks.md): only under one of the agent's
   * `spec.webhooks[].allow_request_urls`, else 422 naming the field (src/tasks/webhooks/webhook-url.policy.ts).
   */
  @IsOptional()
  @IsString({ message: 'webhook_url must be a string' })
  webhook_url?: string;
}
