import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { ProviderHttpError } from './chat-completions.client';
import { isContextLengthExceeded } from './context-length';
import { llmErrorOfStatus } from './provider-status.mapper';

/** OpenAI's real answer to an input over the model's context window. */
const OPENAI_BODY = {
  message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
  type: 'invalid_request_error',
  param: 'messages',
  code: 'context_length_exceeded',
};
/** A provider's error answer as our completions client maps it. */
const http = (status: number, body: { message: string; code?: string }) => {
  const cause = new ProviderHttpError(status, `${status} ${body.message}`, body.code, 'req_1', {});
  return llmErrorOfStatus({ status, code: body.code, message: cause.message, header: () => undefined }, cause);
};

describe('isContextLengthExceeded', () => {
  it("recognizes the provider's context-length answer after mapping", () => {
    expect(isContextLengthExceeded(http(400, OPENAI_BODY))).toBe(true);
    // an OpenAI-compatible server that says it without the code
    expect(isContextLengthExceeded(http(400, { message: 'prompt is too long: 210000 tokens > 200000 maximum' }))).toBe(true);
    expect(isContextLengthExceeded(http(400, { message: 'input is too long for the model' }))).toBe(true);
  });

  it('is false for any other failure', () => {
    expect(isContextLengthExceeded(http(400, { message: 'Invalid value for temperature', code: 'invalid_value' }))).toBe(false);
    expect(isContextLengthExceeded(http(500, OPENAI_BODY))).toBe(false);
    expect(isContextLengthExceeded(new DomainError(ErrorCode.LLM_REQUEST_REJECTED, 'no'))).toBe(false);
    expect(isContextLengthExceeded(new Error('context_length_exceeded'))).toBe(false);
  });
});
