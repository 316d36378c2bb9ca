import { RISK_LEVELS, type RiskLevel } from '../../agents/config/governance.schema';
import { ToolError } from '../tool-error';
import { JsonSchema, Tool, ToolContext, ToolOutput } from '../tool.port';
import type { OpenApiOperation } from './openapi-operations';
import { buildRequestTarget } from './openapi-url';

/** Longer answers are cut: a tool result goes back into the model's context window. */
const MAX_RESULT_CHARS = 64 * 1024;
const SAFE_METHODS = new Set(['get', 'head', 'options']);
const IDEMPOTENT_METHODS = new Set(['get', 'head', 'options', 'put', 'delete']);

/**
 * One OpenAPI operation as a tool named `{plugin}-{operationId}`. The arguments are the
 * operation's path, query and header parameters by name, plus `body` for a JSON request body.
 * Risk: the operation's `x-ta-risk` when declared; else `read_only` for the HTTP-safe methods
 * (GET, HEAD, OPTIONS) and `write_high_risk` for the rest.
 */
export class OpenApiTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly risk: RiskLevel;
  readonly idempotent: boolean;
  readonly source: string;

  constructor(
    pluginName: string,
    private readonly op: OpenApiOperation,
    private readonly serverUrl: string,
    private readonly forwardToken: boolean,
  ) {
    this.name = `${pluginName}-${op.operationId}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
    this.description = op.description;
    this.parameters = argumentsSchema(op);
    this.risk = RISK_LEVELS.includes(op.declaredRisk as RiskLevel)
      ? (op.declaredRisk as RiskLevel)
      : SAFE_METHODS.has(op.method)
        ? 'read_only'
        : 'write_high_risk';
    this.idempotent = IDEMPOTENT_METHODS.has(op.method);
    this.source = `openapi:${pluginName}`;
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput> {
    // Builds the URL first: arguments that would leave their segment are refused before anything is sent.
    const { url: target, headers: paramHeaders } = buildRequestTarget(this.serverUrl, this.op.path, this.op.parameters, args);
    const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5', ...paramHeaders };
    let body: string | undefined;
    if (this.op.body && args.body !== undefined) {
      body = JSON.stringify(args.body);
      headers['content-type'] = 'application/json';
    }
    if (this.forwardToken && ctx.bearerToken) headers.authorization = `Bearer ${ctx.bearerToken}`;
    const res = await fetch(target, { method: this.op.method.toUpperCase(), headers, body, signal: ctx.signal });
    const text = await res.text();
    const shown = text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}\n[truncated]` : text;
    if (res.ok) return { content: shown };
    const err = new ToolError(`HTTP ${res.status} from ${this.op.method.toUpperCase()} ${this.op.path}: ${shown.slice(0, 2000)}`);
    // 429/503: refused before doing anything; 502/504: a gateway may have passed it on.
    const retryClass = res.status === 429 || res.status === 503 ? 'always' : res.status === 502 || res.status === 504 ? 'if-idempotent' : 'never';
    throw Object.assign(err, { retryClass });
  }
}

function argumentsSchema(op: OpenApiOperation): JsonSchema {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const p of op.parameters) {
    properties[p.name] = p.description ? { ...p.schema, description: p.schema.description ?? p.description } : p.schema;
    if (p.required) required.push(p.name);
  }
  if (op.body) {
    properties.body = op.body.description ? { ...op.body.schema, description: op.body.description } : op.body.schema;
    if (op.body.required) required.push('body');
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}
