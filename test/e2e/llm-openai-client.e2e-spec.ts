import { DomainError } from '../../src/common/errors/domain-error';
import { ErrorCode } from '../../src/common/errors/error-code';
import { LlmRequest, LlmResult, LlmStreamEvent } from '../../src/llm/llm-client.port';
import { LlmProvider } from '../../src/llm/llm-provider';
import { FakeOpenAi, reply, startFakeOpenAi } from '../support/fake-openai.server';

/**
 * The OpenAI-compatible client as the server builds it (LlmProvider): completions and streams
 * posted by our own client (the SDK's request and rules), against the fake provider over real HTTP: request shape,
 * streaming, tool calls, usage, retries, and how each failure becomes a domain error.
 */
describe('OpenAiLlmClient (completions and streams on our own client)', () => {
  let fake: FakeOpenAi;
  beforeEach(async () => {
    fake = await startFakeOpenAi();
  });
  afterEach(() => fake.close());

  const client = (o: { timeout?: number; maxRetries?: number; baseUrl?: string } = {}) =>
    new LlmProvider({ apiKey: 'sk-test', baseUrl: o.baseUrl ?? fake.baseURL, timeoutMs: o.timeout ?? 5_000, maxRetries: o.maxRetries ?? 0 }).clientFor(
      'gpt-4o',
    );
  const request = (o: Partial<LlmRequest> = {}): LlmRequest => ({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], ...o });

  async function collect(events: AsyncIterable<LlmStreamEvent>): Promise<{ deltas: string[]; result?: LlmResult }> {
    const deltas: string[] = [];
    let result: LlmResult | undefined;
    for await (const e of events) {
      if (e.type === 'delta') deltas.push(e.text);
      else result = e.result;
    }
    return { deltas, result };
  }

  async function failure(p: Promise<unknown>): Promise<DomainError> {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DomainError);
    return err as DomainError;
  }

  describe('requests', () => {
    it('sends the model, the messages, temperature 0 and max_tokens, with the bearer key', async () => {
      fake.script(reply.text('ok'));
      await client().complete(request({ temperature: 0, maxTokens: 42 }));
      const [r] = fake.requests;
      expect(r.path).toBe('/v1/chat/completions');
      expect(r.headers.authorization).toBe('Bearer sk-test');
      expect(r.body).toEqual({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], temperature: 0, max_tokens: 42, stream: false });
    });

    it('leaves temperature out when the agent sets none', async () => {
      fake.script(reply.text('ok'));
      await client().complete(request());
      expect(fake.requests[0].body).not.toHaveProperty('temperature');
      expect(fake.requests[0].body).not.toHaveProperty('max_tokens');
    });

    it('sends max_completion_tokens and reasoning_effort to reasoning models', async () => {
      fake.script(reply.text('ok'));
      await client().complete(request({ model: 'o3-mini', maxTokens: 100, reasoningEffort: 'low' }));
      expect(fake.requests[0].body).toMatchObject({ max_completion_tokens: 100, reasoning_effort: 'low' });
      expect(fake.requests[0].body).not.toHaveProperty('max_tokens');
    });

    it('sends tools as functions', async () => {
      fake.script(reply.text('ok'));
      const parameters = { type: 'object', properties: { city: { type: 'string' } } };
      await client().complete(request({ tools: [{ name: 'weather-get', description: 'Weather', parameters }] }));
      expect(fake.requests[0].body.tools).toEqual([{ type: 'function', function: { name: 'weather-get', description: 'Weather', parameters } }]);
    });
  });

  describe('answers', () => {
    it('returns the text, usage and finish reason of a completion', async () => {
      fake.script(reply.text('Hello there', { usage: { prompt_tokens: 11, completion_tokens: 2 } }));
      await expect(client().complete(request())).resolves.toEqual({
        content: 'Hello there',
        toolCalls: [],
        usage: { completion_tokens: 2, prompt_tokens: 11, total_tokens: 13 },
        finishReason: 'stop',
      });
    });

    it('streams deltas in order and ends with the usage of the final chunk', async () => {
      fake.script(reply.chunks(['Hel', 'lo ', 'world'], { usage: { prompt_tokens: 5, completion_tokens: 3 } }));
      const { deltas, result } = await collect(client().stream(request()));
      expect(deltas).toEqual(['Hel', 'lo ', 'world']);
      expect(result).toEqual({
        content: 'Hello world',
        toolCalls: [],
        usage: { completion_tokens: 3, prompt_tokens: 5, total_tokens: 8 },
        finishReason: 'stop',
      });
      expect(fake.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    });

    const calls = [
      { id: 'call_1', name: 'weather-get', arguments: '{"city":"Oslo"}' },
      { id: 'call_2', name: 'time-now', arguments: '{}' },
    ];

    it('returns tool calls of a completion', async () => {
      fake.script(reply.toolCalls(calls));
      const result = await client().complete(request());
      expect(result.toolCalls).toEqual(calls);
      expect(result.finishReason).toBe('tool_calls');
    });

    it('assembles streamed tool calls from their pieces', async () => {
      fake.script(reply.toolCalls(calls, { usage: { prompt_tokens: 9, completion_tokens: 4 } }));
      const { deltas, result } = await collect(client().stream(request()));
      expect(deltas).toEqual([]);
      expect(result?.toolCalls).toEqual(calls);
      expect(result?.finishReason).toBe('tool_calls');
      expect(result?.usage.total_tokens).toBe(13);
    });
  });

  describe('failures', () => {
    it('maps 429 to LLM_RATE_LIMITED with the provider Retry-After', async () => {
      fake.script(reply.error(429, { headers: { 'retry-after': '7' } }));
      const err = await failure(client().complete(request()));
      expect(err.code).toBe(ErrorCode.LLM_RATE_LIMITED);
      expect(err.retryAfter).toBe(7);
    });

    it.each([500, 503])('maps %i to LLM_UNAVAILABLE', async (status) => {
      fake.script(reply.error(status));
      expect((await failure(client().complete(request()))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
    });

    it('maps 400 to LLM_REQUEST_REJECTED, and a content-filter 400 to LLM_CONTENT_FILTERED', async () => {
      fake.script(
        reply.error(400),
        reply.error(400, {
          body: {
            error: {
              message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
              type: null,
              param: 'prompt',
              code: 'content_filter',
              status: 400,
            },
          },
        }),
      );
      expect((await failure(client().complete(request()))).code).toBe(ErrorCode.LLM_REQUEST_REJECTED);
      expect((await failure(client().complete(request()))).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
    });

    it('maps a finish_reason of content_filter to LLM_CONTENT_FILTERED', async () => {
      fake.script(reply.text('', { finishReason: 'content_filter' }), reply.chunks(['Part'], { finishReason: 'content_filter' }));
      expect((await failure(client().complete(request()))).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
      expect((await failure(collect(client().stream(request())))).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
    });

    it('maps a wrong key (401) to LLM_REQUEST_REJECTED without echoing the provider message', async () => {
      fake.script(
        reply.error(401, { body: { error: { message: 'Incorrect API key provided: sk-te**st', type: 'invalid_request_error', code: 'invalid_api_key' } } }),
      );
      const err = await failure(client().complete(request()));
      expect(err.code).toBe(ErrorCode.LLM_REQUEST_REJECTED);
      expect(err.message).not.toContain('sk-');
    });

    it('maps the SDK timeout to LLM_TIMEOUT (and the provider sees the request dropped)', async () => {
      fake.script(reply.hang());
      const err = await failure(client({ timeout: 200 }).complete(request()));
      expect(err.code).toBe(ErrorCode.LLM_TIMEOUT);
      await fake.requests[0].disconnected;
    });

    it('maps a provider slower than the SDK timeout to LLM_TIMEOUT, streaming or not', async () => {
      fake.script(reply.text('too late', { delayMs: 600 }), reply.text('too late', { delayMs: 600 }));
      expect((await failure(client({ timeout: 150 }).complete(request()))).code).toBe(ErrorCode.LLM_TIMEOUT);
      expect((await failure(collect(client({ timeout: 150 }).stream(request())))).code).toBe(ErrorCode.LLM_TIMEOUT);
    });

    it('maps a stream that stalls after it began to LLM_TIMEOUT', async () => {
      fake.script(reply.hang(['Hel']));
      const deltas: string[] = [];
      const err = await failure(
        (async () => {
          for await (const e of client({ timeout: 300 }).stream(request())) if (e.type === 'delta') deltas.push(e.text);
        })(),
      );
      expect(deltas).toEqual(['Hel']);
      expect(err.code).toBe(ErrorCode.LLM_TIMEOUT);
      await fake.requests[0].disconnected;
    });

    it('maps a stream whose connection dies mid-way to LLM_UNAVAILABLE, after the deltas that arrived', async () => {
      fake.script(reply.streamThenFail(['one ', 'two ']));
      const deltas: string[] = [];
      const err = await failure(
        (async () => {
          for await (const e of client().stream(request())) if (e.type === 'delta') deltas.push(e.text);
        })(),
      );
      expect(deltas).toEqual(['one ', 'two ']);
      expect(err.code).toBe(ErrorCode.LLM_UNAVAILABLE);
    });

    it('does not pass off a stream that ended without a finish reason as a complete answer', async () => {
      fake.script(reply.truncated(['half an ']));
      expect((await failure(collect(client().stream(request())))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
    });

    it('maps an error event mid-stream to LLM_UNAVAILABLE (a filter to LLM_CONTENT_FILTERED), after the deltas that came', async () => {
      fake.script(
        reply.streamError(['one '], { message: 'The server had an error: sk-abc123' }),
        reply.streamError([], { message: 'filtered', code: 'content_filter' }),
      );
      const deltas: string[] = [];
      const err = await failure(
        (async () => {
          for await (const e of client().stream(request())) if (e.type === 'delta') deltas.push(e.text);
        })(),
      );
      expect(deltas).toEqual(['one ']);
      expect(err.code).toBe(ErrorCode.LLM_UNAVAILABLE);
      expect(err.message).not.toContain('sk-abc123');
      expect((await failure(collect(client().stream(request())))).code).toBe(ErrorCode.LLM_CONTENT_FILTERED);
    });

    it('maps an unreachable provider to LLM_UNAVAILABLE', async () => {
      const url = fake.baseURL;
      await fake.close();
      expect((await failure(client({ baseUrl: url }).complete(request()))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
      expect((await failure(collect(client({ baseUrl: url }).stream(request())))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
      fake = await startFakeOpenAi(); // for afterEach
    });

    it('ends with REQUEST_CANCELED when the caller aborts a stream, and the provider sees the disconnect', async () => {
      fake.script(reply.hang(['first ']));
      const abort = new AbortController();
      const err = await failure(
        (async () => {
          for await (const e of client().stream(request(), abort.signal)) if (e.type === 'delta') abort.abort();
        })(),
      );
      expect(err.code).toBe(ErrorCode.REQUEST_CANCELED);
      await fake.requests[0].disconnected;
    });

    it('ends with REQUEST_CANCELED when the caller aborts a completion', async () => {
      fake.script(reply.hang());
      const abort = new AbortController();
      const p = client().complete(request(), abort.signal);
      await fake.waitForRequest(0);
      abort.abort();
      expect((await failure(p)).code).toBe(ErrorCode.REQUEST_CANCELED);
      await fake.requests[0].disconnected;
    });
  });

  describe('retries (the SDK rules, for completions and streams alike)', () => {
    it('retries a 500 as configured, streaming or not', async () => {
      fake.script(reply.error(500, { headers: { 'retry-after-ms': '1' } }), reply.text('second time'));
      await expect(client({ maxRetries: 1 }).complete(request())).resolves.toMatchObject({ content: 'second time' });
      expect(fake.requests).toHaveLength(2);
      fake.script(reply.error(500, { headers: { 'retry-after-ms': '1' } }), reply.chunks(['streamed ', 'second time']));
      const { deltas, result } = await collect(client({ maxRetries: 1 }).stream(request()));
      expect(deltas).toEqual(['streamed ', 'second time']);
      expect(result?.content).toBe('streamed second time');
      expect(fake.requests).toHaveLength(4);
    });

    it('retries a connection dropped before any answer and an attempt past the timeout, each with a fresh attempt', async () => {
      fake.script(reply.streamThenFail([]), reply.hang(), reply.text('third time'));
      await expect(client({ maxRetries: 2, timeout: 300 }).complete(request())).resolves.toMatchObject({ content: 'third time' });
      expect(fake.requests).toHaveLength(3);
      await fake.requests[1].disconnected; // the timed-out attempt was dropped, not left open
    });

    it("waits the provider's retry-after-ms before retrying a 429, and gives up after maxRetries", async () => {
      fake.script(reply.error(429, { headers: { 'retry-after-ms': '300' } }), reply.text('ok'));
      const started = Date.now();
      await expect(client({ maxRetries: 1 }).complete(request())).resolves.toMatchObject({ content: 'ok' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      fake.script(
        reply.error(503, { headers: { 'retry-after-ms': '1' } }),
        reply.error(503, { headers: { 'retry-after-ms': '1' } }),
        reply.text('not reached'),
      );
      expect((await failure(client({ maxRetries: 1 }).complete(request()))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
      expect(fake.requests).toHaveLength(4);
      expect(fake.pending()).toBe(1);
      fake.discard();
    });

    it('does not retry a 400, nor a 5xx the provider marks x-should-retry: false', async () => {
      fake.script(reply.error(400), reply.error(503, { headers: { 'x-should-retry': 'false' } }), reply.text('not reached'));
      expect((await failure(client({ maxRetries: 2 }).complete(request()))).code).toBe(ErrorCode.LLM_REQUEST_REJECTED);
      expect((await failure(client({ maxRetries: 2 }).complete(request()))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
      expect(fake.requests).toHaveLength(2);
      fake.discard();
    });

    it('ends a completion at once when the caller cancels during the wait before a retry', async () => {
      fake.script(reply.error(503, { headers: { 'retry-after': '30' } }), reply.text('not reached'));
      const abort = new AbortController();
      const p = client({ maxRetries: 2 }).complete(request(), abort.signal);
      await fake.waitForRequest(0);
      await new Promise((r) => setTimeout(r, 50)); // the 503 has arrived: now waiting 30 s
      const canceledAt = Date.now();
      abort.abort();
      expect((await failure(p)).code).toBe(ErrorCode.REQUEST_CANCELED);
      expect(Date.now() - canceledAt).toBeLessThan(1_000);
      expect(fake.requests).toHaveLength(1);
      fake.discard();
    });

    it('maps a 200 that is not JSON, or JSON without choices, to LLM_UNAVAILABLE', async () => {
      fake.script(reply.truncated(['not json']), reply.error(200, { body: { object: 'chat.completion' } }));
      expect((await failure(client().complete(request()))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
      expect((await failure(client().complete(request()))).code).toBe(ErrorCode.LLM_UNAVAILABLE);
    });

    it('never retries a stream that has begun', async () => {
      fake.script(reply.streamThenFail(['partial ']), reply.text('must not be used'));
      await failure(collect(client({ maxRetries: 2 }).stream(request())));
      expect(fake.requests).toHaveLength(1);
      expect(fake.pending()).toBe(1);
    });
  });
});
