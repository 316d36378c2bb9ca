import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsIn, IsOptional, IsString, ValidateNested } from 'class-validator';

export class ToolDecisionDto {
  @IsString() tool_call_id!: string;
  @IsBoolean() approved!: boolean;
}

/** `ResumeRequest {action: "approve"|"reject", decisions?}` (API.md §3). */
export class ResumeRequestDto {
  @IsIn(['approve', 'reject'], { message: 'action must be "approve" or "reject"' }) action!: 'approve' | 'reject';

  @IsOptional() @IsArray() @ValidateNested({ each: true }) @Type(() => ToolDecisionDto)
  decisions?: ToolDecisionDto[];
}
