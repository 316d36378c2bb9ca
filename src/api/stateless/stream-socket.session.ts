import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-code';
import { problemOf } from '../../common/errors/problem-of';
import { checkJsonDepth } from '../../common/http/json-depth';
import type { StatelessInvokerService } from '../../invocation/stateless-invoker.service';
import type { ToolCaller } from '../../invocation/tool-loop';
import { llmFailureLogFields } from '../../llm/llm-failure-log';
import type { StatelessInputDto } from '../common/dto/stateless-input.dto';
import { parseInput } from './stateless-agent.controller';
import { CloseCode, closeCodeFor, closeReason } from './stream-socket-close.util';

/** Pings a peer may leave unanswered before the socket is cut. */
const MISSED_PINGS = 3;

export interface StreamSocketDeps {
  invoker: StatelessInvokerService;
  logger: Logger;
  /** A ping every this many ms while the socket is open, and the peer must answer one of every three (TA_SSE_KEEPALIVE_MS; 0 = none). */
  keepaliveMs: number;
  /** The input must come within this many ms of the upgrade (TA_WS_FIRST_MESSAGE_MS). */
  firstMessageTimeoutMs: number;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * One accepted `/stream` socket, upstream's deprecated protocol: the first message is the input,
 * the JSON object `POST /sse` takes as its body; each partial text of the answer is sent as one
 * text frame (the `output_partial` of each `partial-response`, nothing else: no envelope, no
 * intermediate tasks, no final frame, because the Assistant Orchestrator appends every frame to its
 * answer); then the socket closes with 1000. Later messages are ignored, as upstream does.
 *
 * Failures close the socket with a code and a reason that starts with the error code: 1007 for a
 * message that is not JSON or fails validation (`VALIDATION_FAILED: chat_history.0.role: ...`),
 * 1008 for input that did not come within `firstMessageTimeoutMs` (`INPUT_TIMEOUT`) or that
 * `checkInput` refuses (the gateway's: the caller's token expired, `UNAUTHENTICATED`), 1013 for a
 * rate limit, 1011 for any other failure. A client that leaves aborts the model call.
 */
export class StreamSocketSession {
  /** The close code this side chose, once it chose one. */
  closeCode?: number;
  private readonly left = new AbortController();

  constructor(
    private readonly ws: WebSocket,
    private readonly agent: AgentDefinition,
    private readonly caller: ToolCaller,
    private readonly deps: StreamSocketDeps,
    /** Throws when the input, arrived now, must not be served; the socket then closes with the error. */
    private readonly checkInput: () => void = () => undefined,
  ) {}

  async run(): Promise<void> {
    const { ws, deps } = this;
    this.logErrors();
    const keepalive = deps.keepaliveMs > 0 ? this.heartbeat(deps.keepaliveMs) : undefined;
    ws.once('close', () => {
      clearInterval(keepalive);
      this.left.abort(new Error('client disconnected'));
    });

    const message = await this.firstMessage();
    if (message === undefined) return;
    let input: StatelessInputDto;
    try {
      this.checkInput();
      input = parseInput(this.agent, parseJson(message));
    } catch (err) {
      this.fail(err);
      return;
    }
    try {
      await deps.invoker.invoke(this.agent, input, {
        signal: this.left.signal,
        caller: this.caller,
        emit: (e) => {
          if (e.event === 'partial-response' && ws.readyState === ws.OPEN) ws.send(e.data.output_partial);
        },
      });
      this.close(CloseCode.NORMAL);
    } catch (err) {
      const fields = llmFailureLogFields(err);
      if (fields) deps.logger.warn({ agent: this.agent.source, ...fields }, 'model provider call failed');
      if (this.left.signal.aborted) {
        // The client left; its model call was aborted with it. Nothing to send.
        deps.logger.info({ agent: this.agent.source }, 'stateless stream abandoned by the client');
        return;
      }
      this.fail(err);
    }
  }

  /** Closes the socket with `err`'s code and reason before anything is read (the caller holds too many). */
  refuse(err: unknown): void {
    this.logErrors();
    this.fail(err);
  }

  /**
   * `ws` closes the socket itself on a frame it refuses (1009 over the size limit, 1007 invalid
   * UTF-8, 1002 a protocol error) and then reports the error here: a listener must exist.
   */
  private logErrors(): void {
    this.ws.on('error', (err) => this.deps.logger.info({ agent: this.agent.source, reason: err.message }, 'stream socket error'));
  }

  /**
   * A ping every `ms` keeps proxies from closing a socket that waits on a slow model (as SSE
   * keepalives do); a peer that has answered none of the last three pings is gone, and the socket
   * is cut, which aborts its model call (uvicorn, upstream's server, pings and times out alike).
   * Three, not one: a busy event loop on either side can delay one pong past the next ping.
   */
  private heartbeat(ms: number): NodeJS.Timeout {
    let unanswered = 0;
    this.ws.on('pong', () => (unanswered = 0));
    return setInterval(() => {
      if (unanswered >= MISSED_PINGS) {
        this.deps.logger.info({ agent: this.agent.source }, 'stream socket peer stopped answering pings');
        this.ws.terminate();
        return;
      }
      unanswered++;
      this.ws.ping();
    }, ms);
  }

  /**
   * The first message, or undefined when the socket closed before one came, or none came within
   * `firstMessageTimeoutMs` (the socket is then closed, 1008): answering pings alone must not keep
   * a socket, its count against the caller's cap and its checked identity alive.
   */
  private firstMessage(): Promise<RawData | undefined> {
    const ms = this.deps.firstMessageTimeoutMs;
    return new Promise((resolve) => {
      const done = (data?: RawData) => {
        clearTimeout(timer);
        this.ws.off('message', done);
        this.ws.off('close', onClose);
        resolve(data);
      };
      const onClose = () => done();
      const timer = setTimeout(() => {
        done();
        this.deps.logger.info({ agent: this.agent.source, timeout_ms: ms }, 'stream socket sent no input in time');
        this.fail(new DomainError(ErrorCode.INPUT_TIMEOUT, `no input message within ${ms} ms`));
      }, ms);
      this.ws.once('message', done);
      this.ws.once('close', onClose);
    });
  }

  /** Closes with the code and reason of what failed, as problem details name it (and log it). */
  private fail(err: unknown): void {
    const problem = problemOf(err, `${this.agent.prefix}/stream`, this.deps.logger);
    const what = problem.errors?.length ? problem.errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)).join('; ') : problem.detail;
    this.close(closeCodeFor(problem.status), `${problem.code}: ${what}`);
  }

  private close(code: number, reason = ''): void {
    // Not when already closing: the client, or the server shutting down (1001), chose the code.
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.closeCode = code;
    this.ws.close(code, closeReason(reason));
  }
}

/** A message (text or binary frame) as JSON; anything else is the client's error. */
function parseJson(data: RawData): unknown {
  const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
  checkJsonDepth(buffer, 'message');
  try {
    return JSON.parse(UTF8.decode(buffer));
  } catch {
    throw new DomainError(ErrorCode.MALFORMED_JSON, 'the message is not a JSON document');
  }
}
