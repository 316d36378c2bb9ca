import { Type } from 'class-transformer';
import { IsArray, IsOptional, IsString, MaxLength, ValidateNested } from '../../../common/validation/class-validator-parts';
import { IsStringRecord } from '../../../agents/config/validators';
import { HistoryMessageDto } from './history-message.dto';

/**
 * The body of a stateless (v1/v2) invoke: the union of the four upstream `Base*` input types
 * (`BaseInput`, `BaseInputWithUserContext`, `BaseMultiModalInput`, `...WithUserContext`). Which
 * item types are allowed depends on the agent's `input_type` (text only for `BaseInput*`).
 */
export class StatelessInputDto {
  @IsOptional() @IsString() @MaxLength(256) session_id?: string;

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => HistoryMessageDto)
  chat_history?: HistoryMessageDto[];

  @IsOptional()
  @IsStringRecord({ message: 'user_context must be a map of strings' })
  user_context?: Record<string, string>;
}
