import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AgentDefinition } from '../../agents/config/agent-definition';
import { ENV_CONFIG, LOGGER } from '../../app.tokens';
import type { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import type { ProblemDetails } from '../../common/errors/problem-details';
import { problemOf } from '../../common/errors/problem-of';
import type { EnvConfig } from '../../config/env.config';
import type { StatelessInput } from '../../invocation/stateless-input';
import { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import { TaskEventLogService } from '../../tasks/events/task-event-log.service';
import type { StartedRequest } from '../../tasks/run/started-request';
import { StatefulInvokerService } from '../../tasks/stateful-invoker.service';
import type { StateResponse } from '../../tasks/views/state-response';
import { idempotencyClaim } from '../common/idempotency-key';
import { parseStatelessInput } from '../common/parse-stateless-input';
import { abortOnDisconnect } from '../stateless/abort-on-disconnect';
import { readUserMessage } from '../v3/dto/user-message.read';
import { renamedFields, statelessBodyOf, userMessageOf } from './agent-input.util';
import type { ChatRequest } from './chat-request.util';
import { CompletionChunks, StatefulChunkMapper } from './completion-chunks.util';
import { chatCompletion, headOf, statefulAnswer, statelessAnswer } from './completion.util';
import { ChunkStream } from './chunk-stream.util';
import { openAiErrorOf } from './openai-error.util';
import { BEARER_TOKEN } from '../../auth/principal';

/** The HTTP exchange a completion answers (the caller's token goes on to tools that forward it). */
export interface Exchange {
  req: Request;
  res: Response;
}

/**
 * `POST /openai/v1/chat/completions` over the services every front door shares: a stateless
 * (v1/v2) agent is invoked with the messages as its chat history (StatelessInvokerService); a
 * stateful one gets the last user message as a turn of the task `metadata.task_id` names, or of a
 * new task (StatefulInvokerService: the same ownership, leases, queueing, approvals and
 * Idempotency-Key as `POST /{name}/{version}`), its stream read from the request's event log as
 * every v3 stream is. Only the protocol is translated here (docs/openai.md).
 */
@Injectable()
export class ChatCompletionsService {
  constructor(
    private readonly stateless: StatelessInvokerService,
    private readonly stateful: StatefulInvokerService,
    private readonly events: TaskEventLogService,
    @Inject(ENV_CONFIG) private readonly env: EnvConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** A `chat.completion` (JSON). */
  async complete(agent: AgentDefinition, principal: Principal, chat: ChatRequest, http: Exchange) {
    if (agent.module !== 'v3') {
      const caller = { principal, bearerToken: http.req[BEARER_TOKEN] };
      const r = await this.stateless.invoke(agent, statelessInput(agent, chat), { signal: abortOnDisconnect(http.res), caller });
      return chatCompletion(headOf(r.request_id, chat.model), statelessAnswer(r));
    }
    const started = await this.start(agent, principal, chat, http.req);
    // A request queued behind a running one (on_busy: enqueue) is answered once it has run.
    const response = started.queued ? await this.outcomeOf(started, http) : await started.run({ bearerToken: http.req[BEARER_TOKEN] });
    return chatCompletion(headOf(started.ids.request_id, chat.model), statefulAnswer(response!));
  }

  /** The same answer as `chat.completion.chunk`s (docs/openai.md, Streaming). */
  async stream(agent: AgentDefinition, principal: Principal, chat: ChatRequest, http: Exchange): Promise<void> {
    if (agent.module !== 'v3') return this.streamStateless(agent, principal, chat, http);
    // Refusals (another user's task, a busy one, a stale id) are answered before the stream opens.
    const started = await this.start(agent, principal, chat, http.req);
    const { log, after } = await started.stream({ bearerToken: http.req[BEARER_TOKEN], instance: http.req.originalUrl });
    const stream = new ChunkStream(http.res, this.env.http.sseKeepaliveMs);
    const chunks = new CompletionChunks(headOf(started.ids.request_id, chat.model), chat.includeUsage);
    const mapper = new StatefulChunkMapper(chunks);
    const errorOf = (problem: Record<string, unknown>) => openAiErrorOf(problem as ProblemDetails).body;
    let failed = false;
    stream.send(chunks.first({ ...started.ids }));
    await this.events.follow(
      log,
      after,
      (e) => {
        failed ||= e.event === 'error';
        for (const data of mapper.map(e, errorOf)) stream.send(data);
      },
      stream.signal,
    );
    if (stream.signal.aborted) return; // the client left; the request goes on (a v3 stream never cancels it)
    if (!mapper.done) stream.send(this.lost(http.req, started));
    if (mapper.done && !failed) stream.done();
    else stream.end();
  }

  private async streamStateless(agent: AgentDefinition, principal: Principal, chat: ChatRequest, http: Exchange): Promise<void> {
    const input = statelessInput(agent, chat); // a bad body is a JSON 400, before the stream opens
    const stream = new ChunkStream(http.res, this.env.http.sseKeepaliveMs);
    stream.start();
    let chunks: CompletionChunks | undefined;
    let streamed = false;
    const open = (ids: { session_id: string | null; request_id: string }) => {
      chunks = new CompletionChunks(headOf(ids.request_id, chat.model), chat.includeUsage);
      stream.send(chunks.first({ session_id: ids.session_id, request_id: ids.request_id }));
      return chunks;
    };
    try {
      const r = await this.stateless.invoke(agent, input, {
        signal: stream.signal,
        caller: { principal, bearerToken: http.req[BEARER_TOKEN] },
        emit: (e) => {
          if (e.event !== 'partial-response' || !e.data.output_partial) return; // a Sequential agent's earlier tasks are not the answer
          streamed = true;
          stream.send((chunks ?? open(e.data)).delta(e.data.output_partial));
        },
      });
      for (const data of (chunks ?? open(r)).end(statelessAnswer(r), streamed)) stream.send(data);
      stream.done();
    } catch (err) {
      if (stream.signal.aborted) return; // the client left; its model call was aborted with it
      // Not started: the filter answers with the error's own status; started: as the stream's last chunk.
      stream.release();
      throw err;
    }
  }

  private async start(agent: AgentDefinition, principal: Principal, chat: ChatRequest, req: Request): Promise<StartedRequest> {
    const { body, fieldOf } = userMessageOf(chat);
    let msg;
    try {
      msg = readUserMessage(body);
    } catch (err) {
      throw renamedFields(err, fieldOf);
    }
    return this.stateful.start(agent, principal, msg, { claim: idempotencyClaim(req, principal, agent, 'openai-turn', req.body) });
  }

  /** Follows a request's event log to its outcome (its final-response), without sending anything. */
  private async outcomeOf(started: StartedRequest, http: Exchange): Promise<StateResponse> {
    const { log, after } = await started.stream({ bearerToken: http.req[BEARER_TOKEN], instance: http.req.originalUrl });
    let outcome: StateResponse | undefined;
    let problem: Record<string, unknown> | undefined;
    await this.events.follow(
      log,
      after,
      (e) => {
        if (e.event === 'final-response') outcome = e.data as unknown as StateResponse;
        if (e.event === 'error') problem = e.data;
      },
      abortOnDisconnect(http.res),
    );
    if (outcome) return outcome;
    throw problem ? problemError(problem) : new Error(`request ${started.ids.request_id} ended without an outcome`);
  }

  private lost(req: Request, started: StartedRequest) {
    const err = new Error(`request ${started.ids.request_id} ended without an outcome`);
    return openAiErrorOf(problemOf(err, req.originalUrl, this.logger, { ...started.ids })).body;
  }
}

/** A stateless agent's input from the chat, validated as its own route validates it (errors name the client's fields). */
function statelessInput(agent: AgentDefinition, chat: ChatRequest): StatelessInput {
  const { body, fieldOf } = statelessBodyOf(chat);
  try {
    return parseStatelessInput(agent, body);
  } catch (err) {
    throw renamedFields(err, fieldOf);
  }
}

/** A stream's `error` event (problem details) as the error it reports. */
function problemError(problem: Record<string, unknown>): DomainError {
  const code = Object.values(ErrorCode).includes(problem.code as ErrorCode) ? (problem.code as ErrorCode) : ErrorCode.INTERNAL;
  return new DomainError(code, String(problem.detail ?? problem.title ?? 'The request failed'));
}
