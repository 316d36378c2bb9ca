import { setTimeout as sleep } from 'node:timers/promises';
import { exchange, HttpExchange, HttpTimeoutError } from '../../../common/http-client/http-exchange';
import { newUuid } from '../../../common/ids/uuid.util';
import { CredentialsOption, credentialSource } from './aws-credentials';
import { AwsCredentials, signRequest } from './aws-sigv4';
import { AttributeValue, marshall, unmarshall } from './dynamodb-json';

/** An item, a key or expression values as plain values (dynamodb-json.ts converts them). */
export type Item = Record<string, unknown>;

/** One operation's input as the DocumentClient takes it: items and keys as plain values. */
export type WireInput = Record<string, unknown>;

/** A transaction's item (TransactWriteItems): one of Put, Update, Delete or ConditionCheck. */
export type TransactItem = Partial<Record<'Put' | 'Update' | 'Delete' | 'ConditionCheck', WireInput>>;

/** What an operation answers, items and keys as plain values. */
export interface WireOutput {
  Item?: Item;
  Items?: Item[];
  Attributes?: Item;
  LastEvaluatedKey?: Item;
  /** BatchGetItem: each table's items. */
  Responses?: Record<string, Item[]>;
  /** BatchGetItem: each table's keys left to read again. */
  UnprocessedKeys?: Record<string, { Keys?: Item[] }>;
  [field: string]: unknown;
}

/** One DynamoDB operation and its input (items and keys as plain values). */
export class WireCommand<I extends WireInput = WireInput> {
  constructor(
    readonly operation: string,
    readonly input: I,
  ) {}
}

/** The command class of one operation, named as the DocumentClient names it (a call reads as it did with the AWS SDK). */
function operation<I extends WireInput = WireInput>(name: string) {
  return class extends WireCommand<I> {
    constructor(input: I) {
      super(name, input);
    }
  };
}

export const GetCommand = operation('GetItem');
export const PutCommand = operation('PutItem');
export const DeleteCommand = operation('DeleteItem');
export const UpdateCommand = operation('UpdateItem');
export const QueryCommand = operation('Query');
export const ScanCommand = operation('Scan');
export const BatchGetCommand = operation('BatchGetItem');
export const TransactWriteCommand = operation<{ TransactItems: TransactItem[] } & WireInput>('TransactWriteItems');
export const CreateTableCommand = operation('CreateTable');
export const DescribeTableCommand = operation('DescribeTable');
export const DescribeTimeToLiveCommand = operation('DescribeTimeToLive');
export const UpdateTimeToLiveCommand = operation('UpdateTimeToLive');

/**
 * DynamoDB's answer to a request it refused: `name` is its error type (`ConditionalCheckFailedException`,
 * `TransactionCanceledException`, `ResourceNotFoundException`, …), as the AWS SDK names it; the
 * answer's other fields are on it as sent (`CancellationReasons`, `Item`: typed JSON, not converted).
 */
export class DynamoDbServiceError extends Error {
  readonly $fault: 'client' | 'server';
  readonly $metadata: { httpStatusCode: number };
  CancellationReasons?: { Code?: string; Message?: string; Item?: Record<string, AttributeValue> }[];
  Item?: Record<string, AttributeValue>;
  /** Refused for a clock that its own answer corrected (DynamoDbWire's skew): worth signing again. */
  signedAtWrongTime?: boolean;

  constructor(name: string, message: string, status: number, fields: Record<string, unknown>) {
    super(message);
    Object.assign(this, fields);
    this.name = name;
    this.message = message;
    this.$fault = status >= 500 ? 'server' : 'client';
    this.$metadata = { httpStatusCode: status };
  }
}

/**
 * No answer from DynamoDB: the connection failed (`code` its system error, such as ECONNREFUSED)
 * or the attempt's time ran out (`name` TimeoutError). No HTTP status, as the AWS SDK reports it.
 */
export class DynamoDbConnectionError extends Error {
  readonly $metadata: { httpStatusCode?: number } = {};
  readonly code?: string;

  constructor(message: string, cause: Error, timedOut: boolean) {
    super(message, { cause });
    this.name = timedOut ? 'TimeoutError' : 'DynamoDbConnectionError';
    const code = (cause.cause as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string') this.code = code;
  }
}

/** Error types DynamoDB answers when it is busy or throttling: worth one more attempt (the AWS SDK's list). */
const THROTTLING = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'LimitExceededException',
  'TransactionInProgressException',
]);

/** Beyond this, our clock and DynamoDB's (its answers' Date) disagree: requests are signed at its time. */
const CLOCK_SKEW_TOLERANCE_MS = 60_000;
/** Refusals of a signature made at the wrong time (the AWS SDK's list). */
const CLOCK_SKEW_ERRORS = new Set([
  'AuthFailure',
  'InvalidSignatureException',
  'RequestExpired',
  'RequestInTheFuture',
  'RequestTimeTooSkewed',
  'SignatureDoesNotMatch',
]);

export interface DynamoDbWireOptions {
  region: string;
  /** DynamoDB Local or another endpoint; unset: `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL`, else the region's. */
  endpoint?: string;
  credentials?: CredentialsOption;
  /** Attempts per operation (default 2: one retry of a connection failure, a timeout, a 5xx or throttling). */
  maxAttempts?: number;
  /** Each attempt, from connecting to the answer's last byte, must end within this (ms; default 3000). */
  attemptTimeoutMs?: number;
  /** Told the `Date` of every answer, errors included, with when the attempt was sent and answered (dynamodb-clock.ts). */
  onDate?: (serverMs: number, sentAt: number, receivedAt: number) => void;
}

/**
 * The store's DynamoDB client (issue 27): the JSON protocol over the process's kept-alive
 * HTTP/1.1 sockets (src/common/http-client/http-exchange.ts, as the model client), signed with
 * Signature Version 4, items converted as the DocumentClient converts them. It replaces the AWS SDK's client and
 * DocumentClient on every call the store makes: their middleware, schema serde and node:http
 * request cost about 1.5 ms of CPU per call, more than the rest of a turn; this costs a JSON
 * stringify and parse, two SHA-256 and an HMAC. Retries as the SDK's standard mode with
 * `maxAttempts` (jittered: up to 100 ms, 500 ms after throttling); no retry token bucket. As the
 * SDK does, a transaction carries a ClientRequestToken (withToken) and requests are signed at
 * DynamoDB's time once its answers' Date is more than a minute from ours.
 */
export class DynamoDbWire {
  readonly url: URL;
  private readonly region: string;
  private readonly credentials: () => Promise<AwsCredentials>;
  private readonly maxAttempts: number;
  private readonly attemptTimeoutMs: number;
  /** How far DynamoDB's clock is ahead of ours (ms), once beyond CLOCK_SKEW_TOLERANCE_MS: requests are signed at its time. */
  private skewMs = 0;

  constructor(private readonly options: DynamoDbWireOptions) {
    this.region = options.region;
    this.url = new URL(options.endpoint ?? process.env.AWS_ENDPOINT_URL_DYNAMODB ?? process.env.AWS_ENDPOINT_URL ?? regionEndpoint(options.region));
    if (this.url.protocol !== 'http:' && this.url.protocol !== 'https:') throw new TypeError(`DynamoDB endpoint ${this.url.href} is not http(s)`);
    this.credentials = credentialSource(options.credentials);
    this.maxAttempts = options.maxAttempts ?? 2;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 3000;
  }

  async send(command: WireCommand): Promise<WireOutput> {
    const body = JSON.stringify(toWire(withToken(command)));
    for (let attempt = 1; ; attempt++) {
      try {
        return fromWire(await this.attempt(command.operation, body));
      } catch (err) {
        const delay = attempt < this.maxAttempts ? retryDelay(err) : undefined;
        if (delay === undefined) throw err;
        await sleep(delay);
      }
    }
  }

  private async attempt(operation: string, body: string): Promise<WireOutput> {
    const credentials = await this.credentials();
    const headers: Record<string, string> = {
      host: this.url.host,
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `DynamoDB_20120810.${operation}`,
    };
    const signed = signRequest(
      { method: 'POST', path: this.url.pathname, headers, body },
      credentials,
      { region: this.region, service: 'dynamodb' },
      new Date(Date.now() + this.skewMs),
    );
    const sentAt = Date.now();
    let answer: HttpExchange;
    try {
      answer = await exchange(this.url, { method: 'POST', headers: { ...headers, ...signed }, body, timeoutMs: this.attemptTimeoutMs });
    } catch (err) {
      const timedOut = err instanceof HttpTimeoutError;
      throw new DynamoDbConnectionError(`DynamoDB ${operation}: ${(err as Error).message}`, err as Error, timedOut);
    }
    const skewBefore = this.skewMs;
    const date = answer.headers.date;
    if (date) {
      const serverMs = Date.parse(date);
      const receivedAt = Date.now();
      this.options.onDate?.(serverMs, sentAt, receivedAt);
      // AWS refuses a signature more than 5 minutes off its clock; the SDK corrects alike.
      if (Number.isFinite(serverMs)) this.skewMs = Math.abs(serverMs - receivedAt) > CLOCK_SKEW_TOLERANCE_MS ? serverMs - receivedAt : 0;
    }
    const text = answer.body.toString('utf8');
    let parsed: Record<string, unknown> = {};
    try {
      if (text) parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      if (answer.status < 300) throw new DynamoDbServiceError('SerializationException', `DynamoDB ${operation} answered invalid JSON`, 502, {});
    }
    if (answer.status < 300) return parsed as WireOutput;
    const typeHeader = answer.headers['x-amzn-errortype'];
    const type = String(parsed.__type ?? (Array.isArray(typeHeader) ? typeHeader[0] : typeHeader) ?? `HTTP${answer.status}`);
    const name = type.split('#').pop()!.split(':')[0]!;
    const { __type: _type, message, Message, ...fields } = parsed;
    const err = new DynamoDbServiceError(name, String(message ?? Message ?? `DynamoDB ${operation} failed with HTTP ${answer.status}`), answer.status, fields);
    // Refused for our clock, which this answer just corrected: signed again at once.
    if (CLOCK_SKEW_ERRORS.has(name) && this.skewMs !== skewBefore) err.signedAtWrongTime = true;
    throw err;
  }
}

/**
 * A transaction's input with a ClientRequestToken (the AWS SDK fills one in alike): DynamoDB
 * applies a transaction with the same token only once (for 10 minutes), so the retry of one whose
 * answer was lost (applied, then the connection dropped or the attempt timed out) succeeds instead
 * of failing its own condition as a conflict. The body is serialized once, so every attempt of a
 * call carries the same token.
 */
function withToken(command: WireCommand): WireInput {
  if (command.operation !== 'TransactWriteItems' || command.input.ClientRequestToken !== undefined) return command.input;
  return { ...command.input, ClientRequestToken: newUuid() };
}

/** AWS's public endpoint of DynamoDB in `region` (China's regions under amazonaws.com.cn). */
function regionEndpoint(region: string): string {
  if (!/^[a-z0-9-]+$/.test(region)) throw new TypeError(`AWS_REGION ${JSON.stringify(region)} is not a region name`);
  return `https://dynamodb.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}/`;
}

/** How long to wait before the next attempt after `err`; undefined: do not retry it. */
function retryDelay(err: unknown): number | undefined {
  if (err instanceof DynamoDbConnectionError) return Math.random() * 100;
  if (!(err instanceof DynamoDbServiceError)) return undefined;
  if (err.signedAtWrongTime) return 0;
  if (THROTTLING.has(err.name)) return Math.random() * 500;
  const status = err.$metadata.httpStatusCode;
  return status === 500 || status === 502 || status === 503 || status === 504 ? Math.random() * 100 : undefined;
}

/** An input with its items, keys and values as typed JSON (the DocumentClient's conversion). */
function toWire(input: WireInput): WireInput {
  const out: WireInput = {};
  for (const field in input) {
    const value = input[field];
    if (value === undefined) continue;
    switch (field) {
      case 'Key':
      case 'Item':
      case 'ExpressionAttributeValues':
      case 'ExclusiveStartKey':
        out[field] = marshall(value as Item);
        break;
      case 'TransactItems':
        out[field] = (value as TransactItem[]).map((item) => {
          const wire: Record<string, WireInput> = {};
          for (const kind in item) wire[kind] = toWire(item[kind as keyof TransactItem]!);
          return wire;
        });
        break;
      case 'RequestItems': {
        const tables: Record<string, WireInput> = {};
        for (const [table, request] of Object.entries(value as Record<string, WireInput>)) {
          tables[table] = { ...request, Keys: (request.Keys as Item[] | undefined)?.map(marshall) };
        }
        out[field] = tables;
        break;
      }
      default:
        out[field] = value;
    }
  }
  return out;
}

/** An answer with its items and keys as plain values. */
function fromWire(output: WireOutput): WireOutput {
  const typed = output as Record<string, unknown>;
  if (typed.Item) output.Item = unmarshall(typed.Item as Record<string, AttributeValue>);
  if (typed.Attributes) output.Attributes = unmarshall(typed.Attributes as Record<string, AttributeValue>);
  if (typed.LastEvaluatedKey) output.LastEvaluatedKey = unmarshall(typed.LastEvaluatedKey as Record<string, AttributeValue>);
  if (typed.Items) output.Items = (typed.Items as Record<string, AttributeValue>[]).map(unmarshall);
  if (output.Responses) {
    for (const table in output.Responses) output.Responses[table] = (output.Responses[table] as unknown as Record<string, AttributeValue>[]).map(unmarshall);
  }
  if (output.UnprocessedKeys) {
    for (const table in output.UnprocessedKeys) {
      const keys = output.UnprocessedKeys[table]!.Keys as unknown as Record<string, AttributeValue>[] | undefined;
      if (keys) output.UnprocessedKeys[table]!.Keys = keys.map(unmarshall);
    }
  }
  return output;
}

/** Whether `err` is DynamoDB's answer refusing a request with the error type `name`. */
export function isServiceError(err: unknown, name: string): boolean {
  return err instanceof DynamoDbServiceError && err.name === name;
}

/** Whether `err` is DynamoDB's refusal of a write whose condition did not hold. */
export function isConditionFailure(err: unknown): boolean {
  return isServiceError(err, 'ConditionalCheckFailedException');
}
