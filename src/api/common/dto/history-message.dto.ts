import { Expose, plainToInstance, Transform, Type } from 'class-transformer';
import { ArrayMinSize, IsArray, IsIn, ValidateNested } from '../../../common/validation/class-validator-parts';
import { MultiModalItemDto } from './multi-modal-item.dto';

/**
 * One chat-history message. Upstream also accepts the older `{role, content}` shape, read as one
 * text item when `items` is absent (teal-agents PR #203).
 */
export class HistoryMessageDto {
  @IsIn(['user', 'assistant'], { message: 'role must be "user" or "assistant"' }) role!: 'user' | 'assistant';

  @Expose() // so the transform runs when `items` is absent
  @Transform(({ value, obj }) =>
    value === undefined && typeof obj.content === 'string' ? [plainToInstance(MultiModalItemDto, { content_type: 'text', content: obj.content })] : value,
  )
  @IsArray({ message: 'items must be an array (or give content as a string)' })
  @ArrayMinSize(1, { message: 'items must hold at least one item' })
  @ValidateNested({ each: true })
  @Type(() => MultiModalItemDto)
  items!: MultiModalItemDto[];
}
