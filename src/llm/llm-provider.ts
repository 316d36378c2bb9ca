import type { EnvConfig } from '../config/env.config';
import type { ChatEndpoint } from './chat-completions.client';
import { LlmClient } from './llm-client.port';
import { isLocalModel, LOCAL_MODELS } from './local/local-models';

/** Thrown at boot when an agent names a remote model but no provider is configured. */
export class LlmProviderConfigError extends Error {}

const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * Chooses the LlmClient for a model name: `local/...` is a built-in offline model; anything else
 * goes to the one configured provider (Azure OpenAI when TA_AZURE_OPENAI_ENDPOINT is set, else
 * TA_BASE_URL, else api.openai.com). A remote model is never served by a local one silently.
 */
export class LlmProvider {
  private remote?: LlmClient;
  private readonly locals = new Map<string, LlmClient>();
  /** Per model name; the names come from the agents' configuration, so this stays small. */
  private readonly endpoints = new Map<string, ChatEndpoint>();

  constructor(private readonly config: EnvConfig['llm']) {}

  /** Boot-time check: every model an agent names can be served. */
  assertServable(model: string, where: string): void {
    if (isLocalModel(model)) return;
    if (!this.config.apiKey && !this.config.baseUrl && !this.config.azure) {
      throw new LlmProviderConfigError(
        `${where}: model "${model}" needs a provider: set TA_API_KEY (OpenAI), TA_BASE_URL (any OpenAI-compatible server) or TA_AZURE_OPENAI_ENDPOINT with TA_API_KEY (Azure OpenAI); or use the offline model local/echo`,
      );
    }
    if (this.config.azure && !this.config.apiKey) {
      throw new LlmProviderConfigError(`${where}: Azure OpenAI (TA_AZURE_OPENAI_ENDPOINT) needs TA_API_KEY`);
    }
  }

  clientFor(model: string): LlmClient {
    if (isLocalModel(model)) {
      let c = this.locals.get(model);
      if (!c) {
        const make = LOCAL_MODELS.get(model);
        if (!make) throw new LlmProviderConfigError(`unknown built-in model "${model}"`);
        c = make();
        this.locals.set(model, c);
      }
      return c;
    }
    // Checked before the require: a cached require still resolves the path, on every model call.
    if (this.remote) return this.remote;
    const { OpenAiLlmClient } = require('./openai.llm-client') as typeof import('./openai.llm-client');
    const { ChatCompletionsClient } = require('./chat-completions.client') as typeof import('./chat-completions.client');
    const { timeoutMs, maxRetries } = this.config;
    const completions = new ChatCompletionsClient((m) => this.endpointOf(m), { timeoutMs, maxRetries });
    this.remote = new OpenAiLlmClient(completions);
    return this.remote;
  }

  /**
   * The URL and headers of a model's completions, as the SDK would send them: the OpenAI path
   * under the base URL with a bearer key, or Azure's deployment path (the model names the
   * deployment) with `api-version` and the `api-key` header. One per model the agents name.
   */
  private endpointOf(model: string): ChatEndpoint {
    let endpoint = this.endpoints.get(model);
    if (endpoint) return endpoint;
    const { apiKey, azure } = this.config;
    const headers: Record<string, string> = { accept: 'application/json', 'content-type': 'application/json', 'user-agent': 'teal-agent-server' };
    // The SDK reads these two from the environment too; the same calls carry the same headers.
    if (process.env.OPENAI_ORG_ID) headers['openai-organization'] = process.env.OPENAI_ORG_ID;
    if (process.env.OPENAI_PROJECT_ID) headers['openai-project'] = process.env.OPENAI_PROJECT_ID;
    if (azure) {
      headers['api-key'] = apiKey!;
      const url = new URL(`${this.baseUrl()}/deployments/${encodeURIComponent(model)}/chat/completions`);
      url.searchParams.set('api-version', azure.apiVersion);
      endpoint = { url, headers };
    } else {
      if (apiKey) headers.authorization = `Bearer ${apiKey}`;
      endpoint = { url: new URL(`${this.baseUrl()}/chat/completions`), headers };
    }
    // Frozen: the model client writes a frozen headers object's lines once (http-exchange.ts).
    Object.freeze(headers);
    this.endpoints.set(model, endpoint);
    return endpoint;
  }

  /** The API root the client posts under: Azure's `{endpoint}/openai`, else TA_BASE_URL or OpenAI's; no trailing slash. */
  private baseUrl(): string {
    const { baseUrl, azure } = this.config;
    return azure ? `${azure.endpoint.replace(/\/+$/, '')}/openai` : (baseUrl ?? OPENAI_BASE_URL).replace(/\/+$/, '');
  }
}
