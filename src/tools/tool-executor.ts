import type { Attributes, Span } from '@opentelemetry/api';
import { SpanStatusCode } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { ToolsConfig } from '../config/env.config';
import type { LlmToolCall } from '../llm/llm-client.port';
import { ArgsValidator, compileArgsValidator, parseArguments } from './args-validator';
import { errorMessage, retryClassOf, ToolTimeoutError } from './tool-error';
import type { ExtraDataItem, Tool, ToolContext, ToolOutput } from './tool.port';

/** `rejected`: a human rejected the call, so it did not run. */
export type ToolOutcome = 'ok' | 'error' | 'canceled' | 'rejected';

/** The execution of one tool call, as the loop stores it (the request's execution trace). */
export interface ToolExecution {
  id: string;
  name: string;
  arguments: string;
  started_at: string;
  duration_ms: number;
  outcome: ToolOutcome;
  /** What the model is shown as the tool message. */
  result: string;
  attempts: number;
  /** What the tool added to the answer's `extra_data`: only from a call that succeeded (an error result's items are dropped). */
  extra_data?: ExtraDataItem[];
}

export interface ExecuteHooks {
  onStart?: (call: LlmToolCall) => void;
  onDone?: (execution: ToolExecution) => void;
}

type CallContext = Omit<ToolContext, 'signal' | 'bearerToken'> & { signal?: AbortSignal; bearerToken?: string };

/** Runs `fn` in a child span of the current one (Telemetry.inSpan). */
export type SpanRunner = <T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>) => Promise<T>;

/** Where finished calls are counted (Telemetry.recordToolCall). */
export interface ToolMetrics {
  recordToolCall(tool: string, outcome: ToolOutcome, seconds: number): void;
}

/**
 * Runs the tool calls of one model turn: all at once, results in the order of the calls. Nothing
 * here throws for a tool's sake: an unknown tool, arguments that do not parse or do not match the
 * schema, a timeout or a crash all become an error result the model can read and react to. A
 * transient failure is retried with exponential backoff (see `retryClassOf`); a canceled request
 * aborts every running call through its AbortSignal.
 */
export class ToolExecutor {
  private readonly validators = new WeakMap<Tool, ArgsValidator>();

  constructor(
    private readonly config: Pick<ToolsConfig, 'timeoutMs' | 'maxRetries' | 'retryBaseMs'>,
    private readonly logger?: Logger,
    private readonly inSpan?: SpanRunner,
    private readonly metrics?: ToolMetrics,
  ) {}

  executeAll(tools: ReadonlyMap<string, Tool>, calls: LlmToolCall[], ctx: CallContext, hooks: ExecuteHooks = {}): Promise<ToolExecution[]> {
    return Promise.all(calls.map((call) => this.execute(tools.get(call.name), call, ctx, hooks)));
  }

  async execute(tool: Tool | undefined, call: LlmToolCall, ctx: CallContext, hooks: ExecuteHooks = {}): Promise<ToolExecution> {
    hooks.onStart?.(call);
    const startedAt = new Date();
    const t0 = performance.now();
    const { outcome, result, attempts, extraData } = this.inSpan
      ? await this.inSpan(`execute_tool ${call.name}`, spanAttributes(tool, call), async (span) => {
          const r = await this.run(tool, call, ctx);
          span.setAttributes({ 'ta.tool.outcome': r.outcome, 'ta.tool.attempts': r.attempts });
          if (r.outcome !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: r.result.slice(0, 200) });
          return r;
        })
      : await this.run(tool, call, ctx);
    const elapsedMs = performance.now() - t0;
    // A name the model made up is not a label value: it would grow the metric without bound.
    this.metrics?.recordToolCall(tool ? tool.name : 'unknown', outcome, elapsedMs / 1000);
    const execution: ToolExecution = {
      id: call.id,
      name: call.name,
      arguments: call.arguments,
      started_at: startedAt.toISOString(),
      duration_ms: Math.round(elapsedMs),
      outcome,
      result,
      attempts,
      ...(extraData?.length ? { extra_data: extraData } : {}),
    };
    this.logger?.info(
      { tool: call.name, tool_call_id: call.id, source: tool?.source, outcome, attempts, duration_ms: execution.duration_ms },
      'tool call finished',
    );
    hooks.onDone?.(execution);
    return execution;
  }

  private async run(tool: Tool | undefined, call: LlmToolCall, ctx: CallContext): Promise<RunOutcome> {
    if (!tool) return failed(`unknown tool "${call.name}"`, 0);
    const parsed = parseArguments(call.arguments);
    if ('error' in parsed) return failed(`invalid arguments for ${tool.name}: ${parsed.error}`, 0);
    const problems = this.validatorFor(tool)(parsed.args);
    if (problems) return failed(`invalid arguments for ${tool.name}: ${problems}`, 0);

    const timeoutMs = tool.timeoutMs ?? this.config.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      if (ctx.signal?.aborted) return { outcome: 'canceled', result: 'Error: the request was canceled', attempts: attempt - 1 };
      try {
        const out = await this.attempt(tool, parsed.args, ctx, timeoutMs);
        if (out.isError) return failed(out.content, attempt);
        return { outcome: 'ok', result: out.content, attempts: attempt, extraData: out.extraData };
      } catch (err) {
        if (ctx.signal?.aborted) return { outcome: 'canceled', result: 'Error: the request was canceled', attempts: attempt };
        const retry = retryClassOf(err);
        const canRetry = retry === 'always' || (retry === 'if-idempotent' && (tool.idempotent ?? tool.risk === 'read_only'));
        if (!canRetry || attempt > this.config.maxRetries) {
          return failed(`${tool.name} failed: ${errorMessage(err)}`, attempt);
        }
        this.logger?.warn({ tool: tool.name, tool_call_id: call.id, attempt, err: errorMessage(err) }, 'tool call failed; retrying');
        if (!(await backoff(this.config.retryBaseMs, attempt, ctx.signal))) {
          return { outcome: 'canceled', result: 'Error: the request was canceled', attempts: attempt };
        }
      }
    }
  }

  /** One attempt, bounded by the timeout (and the request) even when the tool ignores its signal. */
  private attempt(tool: Tool, args: Record<string, unknown>, ctx: CallContext, timeoutMs: number): Promise<ToolOutput> {
    const timeout = new AbortController();
    const signal = ctx.signal ? AbortSignal.any([ctx.signal, timeout.signal]) : timeout.signal;
    return new Promise<ToolOutput>((resolve, reject) => {
      const settle = (fn: () => void) => {
        clearTimeout(timer);
        ctx.signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const onAbort = () => settle(() => reject(ctx.signal!.reason ?? new Error('canceled')));
      const timer = setTimeout(() => {
        const err = new ToolTimeoutError(timeoutMs);
        timeout.abort(err);
        settle(() => reject(err));
      }, timeoutMs);
      ctx.signal?.addEventListener('abort', onAbort, { once: true });
      Promise.resolve()
        .then(() => tool.execute(args, { signal, principal: ctx.principal, bearerToken: ctx.bearerToken }))
        .then(
          (out) => settle(() => resolve(typeof out === 'string' ? { content: out } : out)),
          (err: unknown) => settle(() => reject(err)),
        );
    });
  }

  private validatorFor(tool: Tool): ArgsValidator {
    let v = this.validators.get(tool);
    if (!v) {
      try {
        v = compileArgsValidator(tool.parameters);
      } catch (err) {
        // A schema we cannot compile (an MCP server's exotic one): let the tool itself judge.
        this.logger?.warn({ tool: tool.name, err: errorMessage(err) }, 'tool parameter schema does not compile; arguments are not validated');
        v = () => undefined;
      }
      this.validators.set(tool, v);
    }
    return v;
  }
}

type RunOutcome = { outcome: ToolOutcome; result: string; attempts: number; extraData?: ExtraDataItem[] };

/** OpenTelemetry GenAI semantic conventions for a tool execution, plus where the tool comes from. */
function spanAttributes(tool: Tool | undefined, call: LlmToolCall): Attributes {
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.id,
    ...(tool ? { 'ta.tool.source': tool.source, 'ta.tool.risk': tool.risk } : {}),
  };
}

function failed(message: string, attempts: number): RunOutcome {
  return { outcome: 'error', result: message.startsWith('Error') ? message : `Error: ${message}`, attempts };
}

/** Waits base·2^(attempt-1), with ±25 % jitter so that parallel retries do not stampede. False if aborted. */
function backoff(baseMs: number, attempt: number, signal?: AbortSignal): Promise<boolean> {
  const delay = baseMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5);
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, delay);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
