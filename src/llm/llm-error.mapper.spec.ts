import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ContentFilterFinishReasonError } from 'openai/core/error';
import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-code';
import { mapLlmError } from './llm-error.mapper';
import { llmFailureLogFields } from './llm-failure-log';

/** The SDK builds these from real responses; `generate` picks the class by status as it does. */
const httpError = (status: number, headers: Record<string, string> = {}, body: Record<string, unknown> = { message: 'provider said no' }) =>
  APIError.generate(status, { error: body }, undefined, new Headers({ 'x-request-id': 'req_123', ...headers }));

describe('mapLlmError', () => {
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
    expect(mapLlmError(httpError(status)).code).toBe(code);
  });

  it('maps transport failures by class: timeout, unreachable, user abort', () => {
    expect(mapLlmError(new APIConnectionTimeoutError()).code).toBe(ErrorCode.LLM_TIMEOUT);
    expect(mapLlmError(new APIConnectionError({ message: 'ECONNREFUSED' })).code).toBe(ErrorCode.LLM_UNAVAILABLE);
    expect(mapLlmError(new APIUserAbortError()).code).toBe(ErrorCode.REQUEST_CANCELED);
  });

  it('calls anything after the caller aborted a cancellation, whatever the SDK threw', () => {
    const abort = new AbortController();
    abort.abort();
    expect(mapLlmError(new TypeError('terminated'), abort.signal).code).toBe(ErrorCode.REQUEST_CANCELED);
  });

  it('takes Retry-After from retry-after-ms, seconds or an HTTP date, defaulting to 1', () => {
    expect(mapLlmError(httpError(429, { 'retry-after-ms': '2500' })).retryAfter).toBe(3);
    expect(mapLlmError(httpError(429, { 'retry-after': '20' })).retryAfter).toBe(20);
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    expect(mapLlmError(httpError(429, { 'retry-after': inAMinute })).retryAfter).toBeGreaterThan(50);
    expect(mapLlmError(httpError(429)).retryAfter).toBe(1);
    // A past date or a negative number is "now", never a negative Retry-After.
    expect(mapLlmError(httpError(429, { 'retry-after': '-5' })).retryAfter).toBe(0);
  });

  it('recognises content filtering by code, by message, and by the SDK finish-reason error', () => {
    expect(mapLlmError(httpError(400, {}, { code: 'content_filter', message: 'filtered' })).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
    expect(mapLlmError(httpError(400, {}, { message: "triggering Azure OpenAI's content management policy" })).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
    expect(mapLlmError(new ContentFilterFinishReasonError()).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
  });

  it('never copies the provider message, which may quote the key', () => {
    const err = mapLlmError(httpError(401, {}, { message: 'Incorrect API key provided: sk-abc123' }));
    expect(err.message).not.toContain('sk-abc123');
    expect(err.cause).toBeInstanceOf(APIError);
  });

  it('passes a DomainError through and maps unknown errors to LLM_UNAVAILABLE', () => {
    const domain = new DomainError(ErrorCode.LLM_TIMEOUT, 'x');
    expect(mapLlmError(domain)).toBe(domain);
    expect(mapLlmError(new SyntaxError('malformed SSE')).code).toBe(ErrorCode.LLM_UNAVAILABLE);
  });
});

describe('llmFailureLogFields', () => {
  it('gives the code, provider status and request id of a mapped provider error', () => {
    expect(llmFailureLogFields(mapLlmError(httpError(500)))).toEqual({
      code: ErrorCode.LLM_UNAVAILABLE,
      provider_status: 500,
      provider_request_id: 'req_123',
    });
  });

  it('names a transport error by SDK class and socket error code', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const fetchFailed = new TypeError('fetch failed', { cause: refused });
    expect(llmFailureLogFields(mapLlmError(new APIConnectionError({ message: 'Connection error.', cause: fetchFailed })))).toEqual({
      code: ErrorCode.LLM_UNAVAILABLE,
      provider_error: 'APIConnectionError',
      transport_error: 'ECONNREFUSED',
    });
    expect(llmFailureLogFields(mapLlmError(new APIConnectionTimeoutError()))).toEqual({
      code: ErrorCode.LLM_TIMEOUT,
      provider_error: 'APIConnectionTimeoutError',
    });
  });

  it('ignores errors that are not provider failures', () => {
    expect(llmFailureLogFields(new DomainError(ErrorCode.REQUEST_CANCELED, 'x'))).toBeUndefined();
    expect(llmFailureLogFields(new Error('x'))).toBeUndefined();
  });
});
