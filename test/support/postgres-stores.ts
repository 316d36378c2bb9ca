import { PostgresStateStore } from '../../src/state/backends/postgres/postgres.state-store';
import { testPostgresUrl, uniqueSchema } from './services';

/**
 * Stores on the run's PostgreSQL (TEST_POSTGRES_URL, started by the global setup) in a schema of
 * their own, migrated once here as a booting server would (`TA_POSTGRES_MIGRATE=auto`): each call
 * of the returned function is one more replica's store on the same schema. `env` is the same store
 * for a server started as a process. Those stores run no expiry sweep (a booting server's store
 * starts it when it migrates): expired tasks read as missing all the same, and their rows go with
 * the run's PostgreSQL.
 */
export async function postgresStores(base: string): Promise<{ store: () => PostgresStateStore; env: Record<string, string>; schema: string }> {
  const schema = uniqueSchema(base);
  const url = testPostgresUrl();
  const store = () => new PostgresStateStore({ url, schema });
  const first = store();
  await first.prepare().finally(() => first.close());
  return { store, env: { TA_STATE_STORE: 'postgres', TA_POSTGRES_URL: url, TA_POSTGRES_SCHEMA: schema }, schema };
}

/** One store on a migrated schema of its own. */
export async function postgresStore(base: string): Promise<PostgresStateStore> {
  return (await postgresStores(base)).store();
}
