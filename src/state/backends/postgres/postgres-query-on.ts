import { ClientBase, Query, QueryResult, QueryResultRow } from 'pg';

/**
 * `client.query` with a callback, not its promise: without one node-postgres sets a closure on the
 * statement's Query after making it, and in this Node (V8 13) a closure stored into a field after the
 * object was made kept the statement's text, values and result alive through the young
 * collections: promoted to the old generation on every statement (docs/performance.md, What V8
 * promotes). Given to the constructor, it is not. The Query is made from the text, and named after:
 * given a config object instead, node-postgres copies it property by property
 * (`Object.getOwnPropertyDescriptors`), ~1 % of a PostgreSQL turn in a CPU profile.
 */
export function queryOn<R>(client: ClientBase, text: string, values: unknown[] | undefined, name?: string): Promise<QueryResult<R & QueryResultRow>> {
  return new Promise((resolve, reject) => {
    const query = new Query<R & QueryResultRow>(text, values ?? [], (err: Error | undefined, res: unknown) =>
      err ? reject(err) : resolve(res as QueryResult<R & QueryResultRow>),
    );
    if (name !== undefined) (query as Query & { name?: string }).name = name;
    client.query(query);
  });
}

/** node-postgres' socket of a client's connection (what its own query_timeout destroys). */
export function socketOf(client: ClientBase): { cork(): void; uncork(): void; destroy(err?: Error): void } | undefined {
  return (client as unknown as { connection?: { stream?: { cork(): void; uncork(): void; destroy(err?: Error): void } } }).connection?.stream;
}

/** Ends the statements whose answer did not come within `ms`: their connection is dropped, so they fail as on a broken one. */
export function dropStalled(client: ClientBase, ms: number): void {
  socketOf(client)?.destroy(new Error(`Query read timeout: no answer within ${ms} ms`));
}
