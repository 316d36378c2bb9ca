import { Type } from 'class-transformer';
import { ArrayMinSize, IsArray, IsOptional, IsUUID, ValidateNested } from 'class-validator';
import { IsStringRecord } from '../../../agents/config/validators';
import { MultiModalItemDto } from '../../common/dto/multi-modal-item.dto';

/** `UserMessage {session_id?, task_id?, items[], user_context?}` (API.md §3). */
export class UserMessageDto {
  @IsOptional() @IsUUID('all', { message: 'session_id must be a UUID' }) session_id?: string;
  @IsOptional() @IsUUID('all', { message: 'task_id must be a UUID' }) task_id?: string;

  @IsArray({ message: 'items must be an array' })
  @ArrayMinSize(1, { message: 'items must hold at least one item' })
  @ValidateNested({ each: true })
  @Type(() => MultiModalItemDto)
  items!: MultiModalItemDto[];

  @IsOptional() @IsStringRecord({ message: 'user_context must be a map of strings' })
  user_context?: Record<string, string>;
}
