import { ValidateIf } from '../../common/validation/class-validator-parts';
import { badItem, Defaulted, describeValue, Rule } from './field-validators';

/** The events a webhook can ask for (docs/webhooks.md). */
export const WEBHOOK_EVENTS = ['request.completed', 'request.failed', 'request.canceled', 'approval.required', 'approval.expired'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/**
 * The signing secret lives in the environment, never in the YAML: a config file is copied around
 * and committed, a secret is not. Standard Webhooks' form is `whsec_` and the base64 of 24 to 64
 * random bytes; the bare base64 is the same key (the `standardwebhooks` package reads both alike, on
 * both ends). Anything else is refused at boot rather than signed with a key no receiver expects.
 */
const SECRET = /^(?:whsec_)?((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why the variable `name` cannot sign webhooks, or undefined when it can. Never shows the value. */
export function webhookSecretProblem(name: unknown, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (typeof name !== 'string' || !ENV_NAME.test(name)) return `must be the name of an environment variable (got ${describeValue(name)})`;
  const value = env[name];
  if (value === undefined || value === '') return `the environment variable ${name} is not set (it must hold the signing secret: whsec_ and base64)`;
  const base64 = SECRET.exec(value.trim())?.[1];
  const bytes = base64 ? Buffer.from(base64, 'base64').length : 0;
  if (bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) {
    return `the environment variable ${name} does not hold a Standard Webhooks secret: whsec_ and the base64 of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes (its value is not shown)`;
  }
  return undefined;
}

/** Why `value` cannot be a webhook URL (or, with `prefix`, an allowed prefix), or undefined. */
export function webhookUrlProblem(value: unknown, prefix = false): string | undefined {
  const expected = prefix ? 'an http:// or https:// URL prefix' : 'an absolute http:// or https:// URL';
  if (typeof value !== 'string') return `must be ${expected} (got ${describeValue(value)})`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be ${expected} (got ${describeValue(value)})`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be ${expected} (got ${describeValue(value)})`;
  // A password in a config file is a secret in the wrong place; and `user@host` is how a prefix is faked.
  if (url.username || url.password) return `must not hold a user name or password (got ${describeValue(value)})`;
  if (prefix && (url.search || url.hash || value.includes('?') || value.includes('#'))) {
    return `must be a scheme, host and path, without ? or # (got ${describeValue(value)})`;
  }
  return undefined;
}

const isEventList = (v: unknown) => Array.isArray(v) && v.length > 0 && v.every((e) => (WEBHOOK_EVENTS as readonly unknown[]).includes(e));

/**
 * `spec.webhooks[]` (ours, docs/webhooks.md): where the agent's events are POSTed, signed per the
 * Standard Webhooks specification. `url` receives every event listed in `events`; an entry with
 * only `allow_request_urls` receives nothing itself, it lets a request name its own `webhook_url`
 * under one of those prefixes, signed with this entry's secret and sent this entry's events.
 */
export class WebhookConfig {
  @ValidateIf((o: WebhookConfig) => o.url != null || o.allow_request_urls == null)
  @Rule('isWebhookUrl', (v) => webhookUrlProblem(v) === undefined, {
    expected: 'an absolute http:// or https:// URL',
    explain: (v) => webhookUrlProblem(v),
    required: 'is required unless allow_request_urls is given (the URL every event is POSTed to)',
  })
  url?: string;

  @Defaulted()
  @Rule('isWebhookEventList', isEventList, {
    expected: `a non-empty list of ${WEBHOOK_EVENTS.join(', ')}`,
    explain: (v) =>
      Array.isArray(v) && v.length === 0
        ? `must list at least one event (leave it out for all: ${WEBHOOK_EVENTS.join(', ')})`
        : badItem((e) => (WEBHOOK_EVENTS as readonly unknown[]).includes(e), `one of ${WEBHOOK_EVENTS.join(', ')}`)(v),
  })
  events: WebhookEventType[] = [...WEBHOOK_EVENTS];

  @Rule('isWebhookSecretEnv', (v) => webhookSecretProblem(v) === undefined, {
    expected: 'the name of an environment variable holding the signing secret',
    explain: (v) => webhookSecretProblem(v),
    required: 'is required (the name of an environment variable holding the signing secret, whsec_ and base64)',
  })
  secret_env!: string;

  @ValidateIf((o: WebhookConfig) => o.allow_request_urls != null)
  @Rule('isUrlPrefixList', (v) => Array.isArray(v) && v.length > 0 && v.every((p) => webhookUrlProblem(p, true) === undefined), {
    expected: 'a non-empty list of http:// or https:// URL prefixes',
    explain: (v) => {
      if (!Array.isArray(v)) return undefined;
      const i = v.findIndex((p) => webhookUrlProblem(p, true) !== undefined);
      return i < 0 ? undefined : `item ${i} ${webhookUrlProblem(v[i], true)}`;
    },
  })
  allow_request_urls?: string[];
}

/**
 * The signing secret, kept out of logs and JSON: a private field is shown by neither
 * `util.inspect` nor `JSON.stringify`, so dumping an AgentDefinition cannot leak it.
 */
export class WebhookSecret {
  readonly #value: string;

  constructor(
    /** The variable it was read from (`secret_env`), safe to show and to store. */
    readonly env: string,
    value: string,
  ) {
    this.#value = value.trim();
  }

  /** The secret itself: for the signer only. */
  reveal(): string {
    return this.#value;
  }
}

/** One `spec.webhooks[]` entry as the rest of the code reads it (AgentDefinition.webhooks). */
export interface WebhookTarget {
  /** Receives every event of `events`; absent for an entry that only allows per-request URLs. */
  url?: string;
  /** Without repeats, in the order given. */
  events: readonly WebhookEventType[];
  secret: WebhookSecret;
  /** Prefixes a request's `webhook_url` may start with (src/tasks/webhooks/webhook-url.policy.ts); may be empty. */
  allowRequestUrls: readonly string[];
}

/** The validated entries with their secrets read from `env` (each was checked to be set). */
export function toWebhookTargets(configs: readonly WebhookConfig[] | undefined, env: NodeJS.ProcessEnv = process.env): WebhookTarget[] {
  return (configs ?? []).map((c) => ({
    url: c.url,
    events: [...new Set(c.events)],
    secret: new WebhookSecret(c.secret_env, env[c.secret_env]!),
    allowRequestUrls: c.allow_request_urls ?? [],
  }));
}
