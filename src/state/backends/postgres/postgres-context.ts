import { StoreClock } from '../../store-clock';
import { PostgresNames } from './postgres-keys';

/**
 * What the facade (postgres.state-store.ts) hands each room (src/state/backends/README.md): the
 * schema's names, the store's clock, and its one bounded call.
 */
export interface PostgresContext {
  readonly names: PostgresNames;
  /** The database's clock (`clock_timestamp()`): sampled on every new connection and by every commit. */
  readonly clock: StoreClock;
  /** Whether commits keep the archive index (PostgresStateStoreOptions.archiveIndex). */
  readonly archiveIndex: boolean;
  /** Whether the commit is a named prepared statement (PostgresStateStoreOptions.preparedStatements). */
  readonly preparedStatements: boolean;
  now(): number;
  /**
   * Runs one statement (one round trip) on a pooled connection: the wait for a connection is
   * bounded (TA_POSTGRES_ACQUIRE_TIMEOUT_MS), the statement too (TA_POSTGRES_STATEMENT_TIMEOUT_MS on
   * the server, a little more for the answer here), and failures are mapped to the contract's errors
   * (`what` names what failed). With `name`, a named prepared statement (PostgresPool.query); with
   * `pipelined`, sent on the pipelined lane when it can take it (PostgresPool.queryPipelined).
   */
  query<R>(what: string, text: string, values?: unknown[], options?: { name?: string; pipelined?: boolean }): Promise<R[]>;
}

/** The database's clock in epoch ms, as a column of a statement that samples it. */
export const CLOCK_MS_SQL = '(extract(epoch FROM clock_timestamp()) * 1000)::double precision';
