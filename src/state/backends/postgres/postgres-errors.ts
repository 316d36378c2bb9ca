import { DomainError } from '../../../common/errors/domain-error';
import { BackendBootError } from '../../backend-boot-error';
import { StateStoreUnavailableError } from '../../state.errors';

/**
 * SQLSTATEs that mean "PostgreSQL cannot serve now", as opposed to a bug in our statements:
 * connection exceptions (08), insufficient resources (53: too many connections, disk full), operator
 * intervention (57: a statement timeout or cancel, pg_terminate_backend, a shutdown or restart),
 * system errors (58), a serialization failure or deadlock (40001, 40P01), a lock not available
 * (55P03) and a read-only transaction (25006: a failover left us on a standby).
 */
const TRANSIENT = /^(08|53|57|58)|^(40001|40P01|55P03|25006)$/;

/** The schema, table or function is missing: a deployment problem (not migrated), a 503 like a missing DynamoDB table. */
const NOT_MIGRATED = /^(3F000|42P01|42883)$/;

/**
 * Maps what node-postgres throws to the contract's errors. Errors without a SQLSTATE (refused or
 * reset connections, a pool wait or an answer that timed out) and the transient SQLSTATEs are
 * "unavailable"; `unsent` says whether the statement was never sent (no connection was had), so a
 * write certainly did not apply. Other server errors, and our own bugs, stay as they are (a 500).
 */
export function toStateError(err: unknown, what: string, unsent: boolean): unknown {
  if (err instanceof DomainError || err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) return err;
  const message = (err as { message?: string })?.message ?? String(err);
  const sqlState = sqlStateOf(err);
  if (sqlState && NOT_MIGRATED.test(sqlState)) {
    return new StateStoreUnavailableError(`PostgreSQL state schema is missing or not migrated (${what}): ${message}`, err, unsent);
  }
  if (sqlState === undefined || TRANSIENT.test(sqlState)) {
    return new StateStoreUnavailableError(`PostgreSQL is unavailable: ${message}`, err, unsent);
  }
  return err;
}

/** The SQLSTATE of an error the server sent (pg's DatabaseError carries a severity); undefined for a client or network error. */
export function sqlStateOf(err: unknown): string | undefined {
  const e = err as { code?: unknown; severity?: unknown };
  return typeof e?.severity === 'string' && typeof e.code === 'string' ? e.code : undefined;
}

/** True when the connection that raised `err` cannot be reused (the pool then discards it). */
export function brokenConnection(err: unknown): boolean {
  const code = sqlStateOf(err);
  return code === undefined || /^(08|57P)/.test(code);
}

/** What went wrong preparing the store at boot (connecting, migrating), as one plain line. */
export function postgresBootError(err: unknown, where: { url: string; schema: string }): BackendBootError {
  if (err instanceof BackendBootError) return err;
  const e = (err instanceof StateStoreUnavailableError && err.cause ? err.cause : err) as { code?: string; message?: string };
  const message = (e?.message ?? String(err)).split('\n')[0];
  const at = `at ${describeUrl(where.url)}`;
  const code = e?.code ?? '';
  let text: string;
  if (/^28/.test(code)) text = `PostgreSQL refused the login ${at}: ${message}`;
  else if (code === '3D000') text = `PostgreSQL ${at}: ${message}`;
  else if (/CERT|SIGNATURE|ISSUER|^ERR_TLS_/.test(code)) {
    // Node's TLS verification (sslmode=verify-full): a CA not in sslrootcert (or Node's list and NODE_EXTRA_CA_CERTS), or another host name.
    text = `PostgreSQL's TLS certificate is not trusted ${at}: ${message} (docs/deploy.md, PostgreSQL: sslrootcert or NODE_EXTRA_CA_CERTS)`;
  } else if (code === '42501') {
    text = `PostgreSQL refused to migrate schema ${where.schema} ${at}: ${message} (grant the role CREATE on the database, or run "teal-agent-server migrate" as a role that may, with TA_POSTGRES_MIGRATE=off)`;
  } else if (code === '' || /^E[A-Z]+$/.test(code) || /^(08|57P03)/.test(code) || /timeout|terminated/i.test(message)) {
    text = `PostgreSQL is unreachable ${at} (${/^E[A-Z]+$/.test(code) ? code : message})`;
  } else text = `PostgreSQL could not prepare schema ${where.schema} ${at}: ${message}`;
  return new BackendBootError(text, err);
}

/** The URL without its password (and query), for messages: `host:port/database`. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || '(PGHOST)'}${u.port ? `:${u.port}` : ''}${u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return 'TA_POSTGRES_URL';
  }
}
