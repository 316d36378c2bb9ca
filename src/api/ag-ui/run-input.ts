import type { Message, ResumeEntry, RunAgentInput } from '@ag-ui/core';
import { DomainError, FieldError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { CLIENT_ID } from '../v3/client-id';

/**
 * The checks an AG-UI `RunAgentInput` must pass before anything is read or run: a malformed input
 * is a 422 problem+json (it is no AG-UI run, so there is no stream to report it in). Only what
 * this server reads is checked; other fields (`state`, `context`, unknown keys) are ignored.
 * `threadId` is a task id, so it follows the v3 rule for ids callers choose (src/api/v3/client-id.ts).
 */
export function parseRunInput(body: unknown): RunAgentInput {
  const errors: FieldError[] = [];
  const b = isObject(body) ? body : {};
  if (!isObject(body)) errors.push({ field: '', message: 'the body must be a JSON object (an AG-UI RunAgentInput)' });
  if (typeof b.threadId !== 'string' || !CLIENT_ID.test(b.threadId)) {
    errors.push({ field: 'threadId', message: 'threadId must be 1 to 128 characters: letters, digits, "-", "_", "." or ":"' });
  }
  if (typeof b.runId !== 'string' || !b.runId.length || b.runId.length > 128)
    errors.push({ field: 'runId', message: 'runId must be a string of 1 to 128 characters' });
  if (!Array.isArray(b.messages)) errors.push({ field: 'messages', message: 'messages must be an array' });
  else b.messages.forEach((m, i) => messageErrors(m, `messages[${i}]`, errors));
  if (b.tools !== undefined && !Array.isArray(b.tools)) errors.push({ field: 'tools', message: 'tools must be an array' });
  if (b.resume !== undefined) {
    if (!Array.isArray(b.resume)) errors.push({ field: 'resume', message: 'resume must be an array' });
    else b.resume.forEach((r, i) => resumeErrors(r, `resume[${i}]`, errors));
  }
  if (errors.length) {
    throw new DomainError(ErrorCode.VALIDATION_FAILED, `Invalid RunAgentInput: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`, { errors });
  }
  return { ...(b as unknown as RunAgentInput), tools: (b.tools as RunAgentInput['tools']) ?? [], context: (b.context as RunAgentInput['context']) ?? [] };
}

function messageErrors(m: unknown, field: string, errors: FieldError[]): void {
  if (!isObject(m) || typeof m.role !== 'string') return void errors.push({ field, message: 'a message must be an object with a role' });
  if (m.role === 'user' && typeof m.content !== 'string' && !Array.isArray(m.content)) {
    errors.push({ field: `${field}.content`, message: 'a user message content must be a string or an array of parts' });
  }
  if (m.role === 'tool' && typeof m.toolCallId !== 'string') errors.push({ field: `${field}.toolCallId`, message: 'a tool message must name its toolCallId' });
}

function resumeErrors(r: unknown, field: string, errors: FieldError[]): void {
  if (!isObject(r) || typeof r.interruptId !== 'string') return void errors.push({ field, message: 'a resume entry must name its interruptId' });
  if (r.status !== 'resolved' && r.status !== 'cancelled') errors.push({ field: `${field}.status`, message: 'status must be "resolved" or "cancelled"' });
  if (r.payload !== undefined && r.payload !== null && !isObject(r.payload)) errors.push({ field: `${field}.payload`, message: 'payload must be an object' });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export type { Message, ResumeEntry };
