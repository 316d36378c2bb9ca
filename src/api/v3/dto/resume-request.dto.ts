import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsIn, IsOptional, IsString, MaxLength, ValidateNested } from '../../../common/validation/class-validator-parts';
import { IsServerId } from '../server-id';

export class ToolDecisionDto {
  @IsString() tool_call_id!: string;
  @IsBoolean() approved!: boolean;
  @IsOptional() @IsString() @MaxLength(2000) reason?: string;
}

/**
 * `ResumeRequest {action?, pause_id?, reason?, decisions?}` (API.md §3). Every field may also be
 * absent: the URL's `action` and `pause_id` queries fill in what the body does not say.
 */
export class ResumeRequestDto {
  @IsOptional() @IsIn(['approve', 'reject'], { message: 'action must be "approve" or "reject"' }) action?: 'approve' | 'reject';

  @IsOptional() @IsServerId('pause_id') pause_id?: string;

  @IsOptional() @IsString() @MaxLength(2000) reason?: string;

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ToolDecisionDto)
  decisions?: ToolDecisionDto[];
}
