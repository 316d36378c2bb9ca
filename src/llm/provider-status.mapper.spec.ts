import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { ProviderHttpError } from './chat-completions.client';
import { HttpConnectionError, HttpTimeoutError } from '../common/http-client/http-exchange';
import { llmFailureLogFields } from './llm-failure-log';
import { llmErrorOfStatus } from './provider-status.mapper';

/** A provider's error answer as our completions client reads one, mapped as the client maps it. */
function mapped(
  status: number,
  headers: Record<string, string> = {},
  body: { message?: string; code?: string } = { message: 'provider said no' },
): DomainError {
  const all = { 'x-request-id': 'req_123', ...headers };
  const cause = new ProviderHttpError(status, `${status} ${body.message}`, body.code, all['x-request-id'], all);
  return llmErrorOfStatus({ status, code: body.code, message: cause.message, header: (name) => all[name as keyof typeof all] }, cause);
}

describe('llmErrorOfStatus', () => {
  it.each([
    [429, ErrorCode.LLM_RATE_LIMITED],
    [400, ErrorCode.LLM_REQUEST_REJECTED],
    [401, ErrorCode.LLM_REQUEST_REJECTED],
    [403, ErrorCode.LLM_REQUEST_REJECTED],
    [404, ErrorCode.LLM_REQUEST_REJECTED],
    [422, ErrorCode.LLM_REQUEST_REJECTED],
    [408, ErrorCode.LLM_TIMEOUT],
    [504, ErrorCode.LLM_TIMEOUT],
    [500, ErrorCode.LLM_UNAVAILABLE],
    [502, ErrorCode.LLM_UNAVAILABLE],
    [503, ErrorCode.LLM_UNAVAILABLE],
  ])('maps HTTP %i to %s', (status, code) => {
    expect(mapped(status).code).toBe(code);
  });

  it('takes Retry-After from retry-after-ms, seconds or an HTTP date, defaulting to 1', () => {
    expect(mapped(429, { 'retry-after-ms': '2500' }).retryAfter).toBe(3);
    expect(mapped(429, { 'retry-after': '20' }).retryAfter).toBe(20);
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    expect(mapped(429, { 'retry-after': inAMinute }).retryAfter).toBeGreaterThan(50);
    expect(mapped(429).retryAfter).toBe(1);
    // A past date or a negative number is "now", never a negative Retry-After.
    expect(mapped(429, { 'retry-after': '-5' }).retryAfter).toBe(0);
  });

  it('recognises content filtering by code and by message', () => {
    expect(mapped(400, {}, { code: 'content_filter', message: 'filtered' }).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
    expect(mapped(400, {}, { message: "triggering Azure OpenAI's content management policy" }).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
  });

  it('never copies the provider message, which may quote the key', () => {
    const err = mapped(401, {}, { message: 'Incorrect API key provided: sk-abc123' });
    expect(err.message).not.toContain('sk-abc123');
    expect(err.cause).toBeInstanceOf(ProviderHttpError);
  });
});

describe('llmFailureLogFields', () => {
  it('gives the code, provider status and request id of a mapped provider error', () => {
    expect(llmFailureLogFields(mapped(500))).toEqual({ code: ErrorCode.LLM_UNAVAILABLE, provider_status: 500, provider_request_id: 'req_123' });
  });

  it('names a transport error by class and socket error code', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const unreachable = new DomainError(ErrorCode.LLM_UNAVAILABLE, 'x', { cause: new HttpConnectionError('The connection failed', { cause: refused }) });
    expect(llmFailureLogFields(unreachable)).toEqual({
      code: ErrorCode.LLM_UNAVAILABLE,
      provider_error: 'HttpConnectionError',
      transport_error: 'ECONNREFUSED',
    });
    const slow = new DomainError(ErrorCode.LLM_TIMEOUT, 'x', { cause: new HttpTimeoutError('No answer') });
    expect(llmFailureLogFields(slow)).toEqual({ code: ErrorCode.LLM_TIMEOUT, provider_error: 'HttpTimeoutError' });
  });

  it('ignores errors that are not provider failures', () => {
    expect(llmFailureLogFields(new DomainError(ErrorCode.REQUEST_CANCELED, 'x'))).toBeUndefined();
    expect(llmFailureLogFields(new Error('x'))).toBeUndefined();
  });
});
