/**
 * Migration 1: the tables and functions of the store (the schema is documented in
 * postgres-keys.ts). `s` is the schema, already checked against SCHEMA_NAME. A migration is never
 * edited once released: a change is a new file, listed in migrations/migration-list.ts.
 *
 * The functions are the store's writes, each one statement (one round trip, one transaction):
 *
 * - `commit_task`: the compare-and-set. It locks the header row (FOR UPDATE: a concurrent commit
 *   waits, then sees the winner's version), counts an expired header as missing, and checks the
 *   version and the expected writeId before writing anything. A create inserts with ON CONFLICT DO
 *   NOTHING, so of two racing creates the second finds the first's row and loses. A create over an
 *   expired header not yet swept starts from a clean slate (its requests and stream log go). Returns
 *   ('ok' | 'conflict', the stored version, the database's clock in epoch ms).
 * - `delete_batch`: one step of deleting a marked task, pinned by version and writeId; removes the
 *   highest `batch` requests, then, once none remain, the header and the stream log (the header
 *   first: an append holding the header's row lock is waited for, and what it wrote is seen).
 *   Returns 'gone', 'changed', 'more' or 'done' (as redis-delete.lua.ts).
 * - `append_stream`: the stream log's rules (StateStore.appendStreamEvents) under the header's row
 *   lock, so appends to one task never interleave. Returns whether anything was eligible.
 * - `sweep_expired`: up to `batch` rows of expired tasks (requests first, the header last), under a
 *   transaction-level advisory lock taken with try: one replica sweeps at a time, the others skip.
 *   Returns the rows removed, or -1 when another replica holds the lock.
 */
export const MIGRATION_0001 = {
  version: 1,
  name: 'init',
  sql: (s: string) => `
CREATE FUNCTION ${s}.now_ms() RETURNS double precision LANGUAGE sql VOLATILE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::double precision $$;

CREATE SEQUENCE ${s}.task_order;

CREATE TABLE ${s}.tasks (
  tenant_id     text NOT NULL,
  task_id       text NOT NULL,
  version       bigint NOT NULL,
  write_id      text,
  owner_id      text NOT NULL,
  session_id    text NOT NULL,
  position      bigint NOT NULL,
  expires_at    bigint,
  lease_until   double precision,
  deleting      boolean NOT NULL,
  request_count integer NOT NULL,
  data          text NOT NULL,
  PRIMARY KEY (tenant_id, task_id)
);
CREATE INDEX tasks_session ON ${s}.tasks (tenant_id, owner_id, session_id, position);
CREATE INDEX tasks_lease ON ${s}.tasks (lease_until, tenant_id, task_id) WHERE lease_until IS NOT NULL;
CREATE INDEX tasks_expiry ON ${s}.tasks (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE ${s}.requests (
  tenant_id  text NOT NULL,
  task_id    text NOT NULL,
  seq        integer NOT NULL,
  request_id text NOT NULL,
  data       text NOT NULL,
  PRIMARY KEY (tenant_id, task_id, seq)
);
CREATE INDEX requests_by_id ON ${s}.requests (tenant_id, request_id);

CREATE TABLE ${s}.stream_events (
  tenant_id text NOT NULL,
  task_id   text NOT NULL,
  seq       integer NOT NULL,
  n         bigint NOT NULL,
  event     text NOT NULL,
  data      text NOT NULL,
  PRIMARY KEY (tenant_id, task_id, seq, n)
);

CREATE FUNCTION ${s}.commit_task(
  p_tenant text, p_task text, p_expected bigint, p_expected_write_id text, p_write_id text,
  p_owner text, p_session text, p_expires_at bigint, p_lease_until double precision, p_deleting boolean,
  p_request_count integer, p_data text, p_seqs integer[], p_request_ids text[], p_requests text[]
) RETURNS TABLE (outcome text, version bigint, now_ms double precision) LANGUAGE plpgsql AS $$
DECLARE
  cur record;
  t double precision := ${s}.now_ms();
  actual bigint := 0;
BEGIN
  SELECT h.version, h.write_id, h.expires_at INTO cur FROM ${s}.tasks h
    WHERE h.tenant_id = p_tenant AND h.task_id = p_task FOR UPDATE;
  IF FOUND AND (cur.expires_at IS NULL OR cur.expires_at > t) THEN
    actual := cur.version;
  END IF;
  IF actual <> p_expected OR (p_expected_write_id IS NOT NULL AND cur.write_id IS DISTINCT FROM p_expected_write_id) THEN
    RETURN QUERY SELECT 'conflict'::text, actual, t;
    RETURN;
  END IF;
  IF actual > 0 THEN
    UPDATE ${s}.tasks h SET version = p_expected + 1, write_id = p_write_id, owner_id = p_owner, session_id = p_session,
        expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting, request_count = p_request_count, data = p_data
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  ELSIF FOUND THEN
    -- Created again over an expired task the sweep has not reached: nothing of the old one stays.
    DELETE FROM ${s}.requests r WHERE r.tenant_id = p_tenant AND r.task_id = p_task;
    DELETE FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task;
    UPDATE ${s}.tasks h SET version = 1, write_id = p_write_id, owner_id = p_owner, session_id = p_session,
        position = nextval('${s}.task_order'), expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting,
        request_count = p_request_count, data = p_data
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  ELSE
    INSERT INTO ${s}.tasks AS h (tenant_id, task_id, version, write_id, owner_id, session_id, position, expires_at, lease_until,
        deleting, request_count, data)
      VALUES (p_tenant, p_task, 1, p_write_id, p_owner, p_session, nextval('${s}.task_order'), p_expires_at, p_lease_until,
        p_deleting, p_request_count, p_data)
      ON CONFLICT (tenant_id, task_id) DO NOTHING;
    IF NOT FOUND THEN
      -- Another create of the id committed first (this one waited for it on the key).
      RETURN QUERY SELECT 'conflict'::text, coalesce((SELECT h.version FROM ${s}.tasks h
        WHERE h.tenant_id = p_tenant AND h.task_id = p_task), 0), t;
      RETURN;
    END IF;
  END IF;
  IF cardinality(p_seqs) > 0 THEN
    INSERT INTO ${s}.requests AS r (tenant_id, task_id, seq, request_id, data)
      SELECT p_tenant, p_task, u.seq, u.request_id, u.data FROM unnest(p_seqs, p_request_ids, p_requests) AS u(seq, request_id, data)
      ON CONFLICT (tenant_id, task_id, seq) DO UPDATE SET request_id = excluded.request_id, data = excluded.data;
  END IF;
  RETURN QUERY SELECT 'ok'::text, p_expected + 1, t;
END $$;

CREATE FUNCTION ${s}.delete_batch(p_tenant text, p_task text, p_version bigint, p_write_id text, p_batch integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  cur record;
BEGIN
  SELECT h.version, h.write_id INTO cur FROM ${s}.tasks h WHERE h.tenant_id = p_tenant AND h.task_id = p_task FOR UPDATE;
  IF NOT FOUND THEN RETURN 'gone'; END IF;
  IF cur.version <> p_version OR cur.write_id IS DISTINCT FROM p_write_id THEN RETURN 'changed'; END IF;
  DELETE FROM ${s}.requests r WHERE r.tenant_id = p_tenant AND r.task_id = p_task AND r.seq IN (
    SELECT q.seq FROM ${s}.requests q WHERE q.tenant_id = p_tenant AND q.task_id = p_task ORDER BY q.seq DESC LIMIT p_batch);
  IF EXISTS (SELECT 1 FROM ${s}.requests r WHERE r.tenant_id = p_tenant AND r.task_id = p_task) THEN RETURN 'more'; END IF;
  DELETE FROM ${s}.tasks h WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  DELETE FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task;
  RETURN 'done';
END $$;

CREATE FUNCTION ${s}.append_stream(p_tenant text, p_task text, p_seq integer, p_request_id text, p_ns bigint[], p_events text[], p_data text[])
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  cur record;
  held integer;
  last bigint;
BEGIN
  SELECT h.request_count, h.deleting, h.expires_at INTO cur FROM ${s}.tasks h
    WHERE h.tenant_id = p_tenant AND h.task_id = p_task FOR NO KEY UPDATE;
  IF NOT FOUND OR cur.deleting OR (cur.expires_at IS NOT NULL AND cur.expires_at <= ${s}.now_ms()) OR p_seq >= cur.request_count THEN
    RETURN false;
  END IF;
  IF p_request_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${s}.requests r
      WHERE r.tenant_id = p_tenant AND r.request_id = p_request_id AND r.task_id = p_task) THEN
    RETURN false;
  END IF;
  SELECT e.seq INTO held FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task ORDER BY e.seq DESC LIMIT 1;
  IF held > p_seq THEN RETURN false; END IF;
  IF held < p_seq THEN
    DELETE FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task AND e.seq < p_seq;
  END IF;
  SELECT coalesce(max(e.n), -1) INTO last FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task AND e.seq = p_seq;
  -- In n order: an event whose n is not above every n before it (stored or earlier in the batch) is skipped.
  INSERT INTO ${s}.stream_events (tenant_id, task_id, seq, n, event, data)
    SELECT p_tenant, p_task, p_seq, b.n, b.event, b.data FROM (
      SELECT u.n, u.event, u.data, max(u.n) OVER (ORDER BY u.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM unnest(p_ns, p_events, p_data) WITH ORDINALITY AS u(n, event, data, i)
    ) b WHERE b.n > greatest(last, coalesce(b.before, -1));
  RETURN true;
END $$;

CREATE FUNCTION ${s}.sweep_expired(p_batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  t double precision := ${s}.now_ms();
  budget integer := p_batch;
  removed integer;
  task record;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('teal-agent-server sweep ${s}', 0)) THEN RETURN -1; END IF;
  FOR task IN SELECT h.tenant_id, h.task_id FROM ${s}.tasks h WHERE h.expires_at <= t
      ORDER BY h.expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED LOOP
    EXIT WHEN budget <= 0;
    DELETE FROM ${s}.requests r WHERE r.tenant_id = task.tenant_id AND r.task_id = task.task_id AND r.seq IN (
      SELECT q.seq FROM ${s}.requests q WHERE q.tenant_id = task.tenant_id AND q.task_id = task.task_id LIMIT budget);
    GET DIAGNOSTICS removed = ROW_COUNT;
    budget := budget - removed;
    IF NOT EXISTS (SELECT 1 FROM ${s}.requests r WHERE r.tenant_id = task.tenant_id AND r.task_id = task.task_id) THEN
      DELETE FROM ${s}.stream_events e WHERE e.tenant_id = task.tenant_id AND e.task_id = task.task_id;
      DELETE FROM ${s}.tasks h WHERE h.tenant_id = task.tenant_id AND h.task_id = task.task_id;
      budget := budget - 1;
    END IF;
  END LOOP;
  RETURN p_batch - budget;
END $$;
`,
};
