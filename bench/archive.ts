import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { Subject } from './subjects';

/** The events a plain v3 turn (one request, one model call, no tools) leaves in the archive. */
export const EVENTS_PER_PLAIN_TURN = ['request_accepted', 'model_call', 'request_completed'] as const;

/** What the archive of a store's "ours with the archive" subject received over the run. */
export interface ArchiveReceived {
  schema: string;
  /** Turns that subject answered over the whole run (warm-up and long conversation included). */
  turns: number;
  /** Rows in `<schema>.events` once the count stopped growing. */
  events: number;
  /** The same rows by event type. */
  byType: Record<string, number>;
}

/** The audit archive of one subject: its PostgreSQL schema, the env that turns it on, its rows counted. */
export interface BenchArchive {
  schema: string;
  /** TA_ARCHIVE_URL and TA_ARCHIVE_SCHEMA, on top of the store's env. */
  env: Record<string, string>;
  /** The rows of `<schema>.events` by type, once they reach `expected` or stop growing for 2 s (the queue drained), 30 s at most. */
  received(expected: number): Promise<{ events: number; byType: Record<string, number> }>;
  /** Drops the schema (a PostgreSQL the bench did not start keeps nothing of the run). */
  drop(): Promise<void>;
}

/**
 * TA_ARCHIVE_URL at `url` (the bench's PostgreSQL, never through the round-trip counter's proxy:
 * the archive's statements are not the live store's), in a schema of this run and store of its own,
 * which the server migrates at boot.
 */
export function benchArchive(url: string, store: string): BenchArchive {
  const schema = `bench_archive_${process.pid}_${Date.now().toString(36)}_${store}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const withClient = async <T>(run: (client: Client) => Promise<T>): Promise<T> => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  };
  const count = () =>
    withClient(async (client) => {
      const { rows } = await client.query<{ type: string; n: number }>(`SELECT type, count(*)::int AS n FROM "${schema}".events GROUP BY type ORDER BY type`);
      const byType = Object.fromEntries(rows.map((r) => [r.type, r.n]));
      return { events: rows.reduce((n, r) => n + r.n, 0), byType };
    });
  return {
    schema,
    env: { TA_ARCHIVE_URL: url, TA_ARCHIVE_SCHEMA: schema },
    async received(expected) {
      const deadline = Date.now() + 30_000;
      let last = await count();
      let stableSince = Date.now();
      while (last.events < expected && Date.now() - stableSince < 2000 && Date.now() < deadline) {
        await sleep(250);
        const now = await count();
        if (now.events !== last.events) stableSince = Date.now();
        last = now;
      }
      return last;
    },
    drop: () => withClient(async (client) => void (await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))),
  };
}

/** The subject with its answered turns counted (every turn it is sent goes through `turn`). */
export function countingTurns(subject: Subject): Subject & { turns: () => number } {
  let turns = 0;
  return {
    ...subject,
    turn: async (id) => {
      const next = await subject.turn(id);
      turns++;
      return next;
    },
    turns: () => turns,
  };
}

/** The archive's rows after the rounds, checked: none at all fails the bench (the subject was not archiving). */
export async function archiveReceived(archive: BenchArchive, subject: { turns: () => number }): Promise<ArchiveReceived> {
  const turns = subject.turns();
  const { events, byType } = await archive.received(turns * EVENTS_PER_PLAIN_TURN.length);
  if (events === 0)
    throw new Error(`the archive (${archive.schema}.events) received no event over ${turns} turns of ours with TA_ARCHIVE_URL: it is not archiving`);
  return { schema: archive.schema, turns, events, byType };
}
