import type { LoggedEvent } from '../../tasks/events/task-event-log.service';
import type { TokenUsage } from '../../llm/llm-client.port';
import { Answer, CompletionHead, statefulAnswer, usageOf } from './completion.util';
import type { OpenAiErrorBody } from './openai-error.util';

/** One `data:` payload of a stream: a `chat.completion.chunk`, or an error that ends it. */
export type StreamData = Record<string, unknown> | OpenAiErrorBody;

/**
 * The chunks of one streamed answer, in OpenAI's order: the first carries the role (and our ids in
 * `metadata`), then content deltas, then an empty delta with `finish_reason: "stop"` and the whole
 * `metadata`, then, with `stream_options.include_usage`, a chunk with no choices and the usage
 * (every earlier chunk then has `usage: null`, as OpenAI sends them).
 */
export class CompletionChunks {
  constructor(
    private readonly head: CompletionHead,
    private readonly includeUsage: boolean,
  ) {}

  first(metadata: Record<string, unknown>): StreamData {
    return this.chunk({ role: 'assistant', content: '' }, null, { metadata });
  }

  delta(content: string): StreamData {
    return this.chunk({ content }, null);
  }

  /** The last chunks: the answer's text when none was streamed, the finish, the usage. */
  end(answer: Answer, streamed: boolean): StreamData[] {
    const out: StreamData[] = [];
    if (!streamed && answer.content) out.push(this.delta(answer.content));
    out.push(this.chunk({}, 'stop', { metadata: answer.metadata }));
    if (this.includeUsage) out.push({ ...this.envelope(), choices: [], usage: usageOf(answer.usage as TokenUsage | undefined) });
    return out;
  }

  /** OpenAI's key order: id, object, created, model. */
  private envelope() {
    return { id: this.head.id, object: 'chat.completion.chunk', created: this.head.created, model: this.head.model };
  }

  private chunk(delta: Record<string, unknown>, finishReason: 'stop' | null, extra: Record<string, unknown> = {}): StreamData {
    return {
      ...this.envelope(),
      choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
      ...(this.includeUsage ? { usage: null } : {}),
      ...extra,
    };
  }
}

/**
 * A stateful request's events (its v3 event log) as chunks: `partial-response` text as content
 * deltas, the `final-response` as the end (a pause's message after any text streamed before it);
 * an `error` as OpenAI's error body. Tool calls and results are the server's business and are not
 * sent (the answer that follows them is). `done` once the outcome was mapped.
 */
export class StatefulChunkMapper {
  done = false;
  private streamed = false;

  constructor(private readonly chunks: CompletionChunks) {}

  map(e: LoggedEvent, errorOf: (problem: Record<string, unknown>) => OpenAiErrorBody): StreamData[] {
    switch (e.event) {
      case 'partial-response': {
        const text = String(e.data.output_partial ?? '');
        if (!text) return [];
        this.streamed = true;
        return [this.chunks.delta(text)];
      }
      case 'final-response': {
        this.done = true;
        const answer = statefulAnswer(e.data as Parameters<typeof statefulAnswer>[0]);
        if (answer.metadata.status !== 'Completed' && this.streamed) return [this.chunks.delta(`\n\n${answer.content}`), ...this.chunks.end(answer, true)];
        return this.chunks.end(answer, this.streamed);
      }
      case 'error':
        this.done = true;
        return [errorOf(e.data)];
      default:
        return [];
    }
  }
}
