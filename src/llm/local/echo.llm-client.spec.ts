import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { LlmRequest, LlmStreamEvent } from '../llm-client.port';
import { EchoLlmClient } from './echo.llm-client';

describe('EchoLlmClient (local/echo)', () => {
  const echo = new EchoLlmClient();
  const request: LlmRequest = {
    model: 'local/echo',
    messages: [
      { role: 'system', content: 'Be nice.' },
      { role: 'user', content: 'first question' },
      { role: 'assistant', content: 'an answer' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ],
  };

  async function all(events: AsyncIterable<LlmStreamEvent>): Promise<LlmStreamEvent[]> {
    const out: LlmStreamEvent[] = [];
    for await (const e of events) out.push(e);
    return out;
  }

  it('answers with the last user message, images shown as [image], words counted as tokens', async () => {
    // prompt: "Be nice." 2 + "first question" 2 + "an answer" 2 + "what is [image]" 3 = 9
    await expect(echo.complete(request)).resolves.toEqual({
      content: 'what is [image]',
      toolCalls: [],
      usage: { completion_tokens: 3, prompt_tokens: 9, total_tokens: 12 },
      finishReason: 'stop',
    });
  });

  it('reports usage in upstream field order (completion, prompt, total): SSE frames are compared as bytes', async () => {
    const { usage } = await echo.complete(request);
    expect(Object.keys(usage)).toEqual(['completion_tokens', 'prompt_tokens', 'total_tokens']);
  });

  it('streams word by word, then one done with the same result', async () => {
    const events = await all(echo.stream(request));
    expect(events.slice(0, -1)).toEqual([
      { type: 'delta', text: 'what ' },
      { type: 'delta', text: 'is ' },
      { type: 'delta', text: '[image]' },
    ]);
    expect(events.at(-1)).toEqual({ type: 'done', result: await echo.complete(request) });
  });

  it('answers an empty string when there is no user message', async () => {
    const result = await echo.complete({ model: 'local/echo', messages: [{ role: 'system', content: 'x' }] });
    expect(result.content).toBe('');
    expect(await all(echo.stream({ model: 'local/echo', messages: [] }))).toEqual([
      { type: 'done', result: { content: '', toolCalls: [], usage: { completion_tokens: 0, prompt_tokens: 0, total_tokens: 0 }, finishReason: 'stop' } },
    ]);
  });

  it('refuses an aborted call with REQUEST_CANCELED, also mid-stream', async () => {
    const aborted = new AbortController();
    aborted.abort();
    await expect(echo.complete(request, aborted.signal)).rejects.toMatchObject({ code: ErrorCode.REQUEST_CANCELED });

    const midway = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const e of echo.stream(request, midway.signal)) {
        if (e.type === 'delta') seen.push(e.text);
        midway.abort();
      }
    })();
    await expect(run).rejects.toBeInstanceOf(DomainError);
    expect(seen).toEqual(['what ']);
  });
});

describe('EchoLlmClient (local/echo) asked for structured output', () => {
  const echo = new EchoLlmClient();
  const schema = {
    type: 'object',
    properties: {
      summary: { type: 'string' },
      count: { type: 'integer' },
      ok: { type: 'boolean' },
      tags: { type: 'array', items: { type: 'string' } },
      level: { enum: ['low', 'high'] },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      step: { $ref: '#/$defs/Step' },
    },
    required: ['summary', 'count', 'ok', 'tags', 'level', 'note', 'step'],
    additionalProperties: false,
    $defs: { Step: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false } },
  };
  const ask = (content: string) => echo.complete({ model: 'local/echo', messages: [{ role: 'user', content }], responseFormat: { name: 'Out', schema } });

  it('answers the simplest value of the schema, strings holding the message', async () => {
    expect(JSON.parse((await ask('hello there')).content)).toEqual({
      summary: 'hello there',
      count: 0,
      ok: false,
      tags: [],
      level: 'low',
      note: 'hello there',
      step: { n: 0 },
    });
  });

  it('answers a message that is itself JSON as is (scripting an answer offline)', async () => {
    expect((await ask(' {"summary": 5} ')).content).toBe('{"summary": 5}');
  });
});
