import { ArchiveNames } from './archive-names';

/** What the facade (archive.store.ts) hands each room: the schema's names and its one bounded call. */
export interface ArchiveContext {
  readonly names: ArchiveNames;
  /**
   * Runs one statement (one round trip) on a pooled connection: the wait for a connection and the
   * statement are bounded, and failures are mapped (archive-errors.ts; `what` names what failed).
   */
  query<R>(what: string, text: string, values?: unknown[]): Promise<R[]>;
}
