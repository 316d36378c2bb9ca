import type { EnvVars } from './env.schema';

/**
 * The rules between environment variables (API.md §6: "invalid combinations stop the boot with a
 * message naming the variable"). Each returns one message per problem.
 */
export function checkEnvCombinations(v: EnvVars): string[] {
  const out: string[] = [];
  if (v.TA_STATE_STORE === 'redis' && !v.TA_REDIS_URL) {
    out.push('TA_REDIS_URL is required when TA_STATE_STORE=redis (a redis:// or rediss:// URL)');
  }
  if (v.TA_STATE_STORE === 'postgres' && !v.TA_POSTGRES_URL) {
    out.push('TA_POSTGRES_URL is required when TA_STATE_STORE=postgres (a postgres:// connection string)');
  }
  if (v.TA_STATE_STORE === 'dynamodb') {
    if (!v.TA_DYNAMODB_TABLE) out.push('TA_DYNAMODB_TABLE is required when TA_STATE_STORE=dynamodb (the table name)');
    if (!v.AWS_REGION) out.push('AWS_REGION is required when TA_STATE_STORE=dynamodb');
  }
  // Dev mode authenticates no one: only an environment that says it is a developer's (or a test's)
  // may run it. `Production`, `prod`, `staging`... are all refused.
  if (v.TA_AUTH_MODE === 'dev' && v.NODE_ENV !== undefined && !isDevNodeEnv(v.NODE_ENV)) {
    out.push(
      `TA_AUTH_MODE=dev is refused when NODE_ENV=${v.NODE_ENV} (dev mode does not authenticate anyone; it runs only with NODE_ENV unset, development or test)`,
    );
  }
  // Entra mode without an audience or a tenant restriction would either accept no token or accept
  // tokens minted for any app in any tenant: neither is a configuration anyone means.
  if (v.TA_AUTH_MODE === 'entra') {
    const mode = 'when TA_AUTH_MODE=entra, the default (TA_AUTH_MODE=dev is for local development)';
    if (!v.TA_ENTRA_AUDIENCE?.length) out.push(`TA_ENTRA_AUDIENCE is required ${mode}: the aud tokens must carry`);
    if (!v.TA_ENTRA_TENANT_ID && !v.TA_ENTRA_ALLOWED_TENANTS?.length) {
      out.push(`TA_ENTRA_TENANT_ID or TA_ENTRA_ALLOWED_TENANTS is required ${mode}: which tenants may call`);
    }
    // Authorization fails closed (a token kind with no requirement is refused), so with neither
    // list every token would be a 403.
    if (!v.TA_ENTRA_REQUIRED_SCOPES?.length && !v.TA_ENTRA_REQUIRED_ROLES?.length) {
      out.push(`TA_ENTRA_REQUIRED_SCOPES (user tokens) or TA_ENTRA_REQUIRED_ROLES (app-only tokens) is required ${mode}`);
    }
  }
  // Any web page could then call with a token it got hold of; list the web apps' origins instead.
  if (v.TA_CORS_ORIGINS?.includes('*') && v.TA_AUTH_MODE !== 'dev') {
    out.push('TA_CORS_ORIGINS=* is refused when TA_AUTH_MODE=entra: list the origins of your web apps (scheme://host[:port], comma-separated)');
  }
  // The archive keeps its own schema and migrations: sharing the store's would mix two schema_version tables.
  if (v.TA_ARCHIVE_URL && v.TA_ARCHIVE_URL === v.TA_POSTGRES_URL && v.TA_ARCHIVE_SCHEMA === v.TA_POSTGRES_SCHEMA) {
    out.push(`TA_ARCHIVE_SCHEMA must differ from TA_POSTGRES_SCHEMA when the archive is in the store's database (both are "${v.TA_ARCHIVE_SCHEMA}")`);
  }
  if (v.TA_AZURE_OPENAI_ENDPOINT && v.TA_BASE_URL) {
    out.push('TA_BASE_URL and TA_AZURE_OPENAI_ENDPOINT are exclusive: set one provider');
  }
  return out;
}

/** NODE_ENV values dev mode may run under (case-insensitive); unset counts as development. */
export function isDevNodeEnv(nodeEnv: string | undefined): boolean {
  return nodeEnv === undefined || /^(development|test)$/i.test(nodeEnv.trim());
}
