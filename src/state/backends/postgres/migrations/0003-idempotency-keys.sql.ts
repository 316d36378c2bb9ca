/**
 * Migration 3: Idempotency-Key entries (StateStore.getIdempotencyEntry, TaskWrite.idempotency; the
 * schema in postgres-keys.ts). `s` is the schema, already checked against SCHEMA_NAME.
 *
 * - `idempotency_keys`: one row per claimed key of a tenant, apart from the tasks (deleting or
 *   expiring a task leaves its entries): the entry as jsonb, exactly what the commit claimed, and
 *   beside it its `expiresAt` (epoch ms, the store's clock: the database's, as `now_ms()` reads it)
 *   for the statements to filter on. An entry whose `expires_at` has passed reads as missing and
 *   may be claimed again; the sweep removes it later.
 * - `idempotency_expiry`: the index the sweep takes the oldest expired entries by.
 * - `commit_task` gains `p_claim` (a new overload, 17 arguments): the entry the write claims, or
 *   null. The claim comes after the version and writeId check, so a commit that loses its
 *   compare-and-set is a 'conflict' whatever the key holds, and after a create's insert of the
 *   header, so of two racing creates of one id the second is a 'conflict' too. It inserts the entry,
 *   or replaces one that has expired (ON CONFLICT DO UPDATE ... WHERE expired: a concurrent claim of
 *   the key waits for this transaction, then finds the row); when a live entry holds the key,
 *   nothing else is written (a created header is deleted again, in the same transaction, before
 *   anyone can see it) and the answer is 'taken' with the stored entry in `held`. A commit without
 *   a claim does exactly what the 16-argument version does. The 15- and 16-argument versions stay,
 *   unchanged, for the replicas of previous releases still running during a rolling deploy (their
 *   commits claim nothing).
 * - `sweep_expired` is replaced (same signature, so the previous release's sweep runs it too): it
 *   removes expired entries first, then expired tasks with the rest of the batch, all under the
 *   same advisory lock, as the in-memory store's sweep does.
 */
export const MIGRATION_0003 = {
  version: 3,
  name: 'idempotency-keys',
  sql: (s: string) => `
CREATE TABLE ${s}.idempotency_keys (
  tenant_id  text NOT NULL,
  key        text NOT NULL,
  expires_at double precision NOT NULL,
  entry      jsonb NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_expiry ON ${s}.idempotency_keys (expires_at);

CREATE FUNCTION ${s}.commit_task(
  p_tenant text, p_task text, p_expected bigint, p_expected_write_id text, p_write_id text,
  p_owner text, p_session text, p_expires_at bigint, p_lease_until double precision, p_deleting boolean,
  p_request_count integer, p_data text, p_archive boolean, p_claim jsonb, p_seqs integer[], p_request_ids text[], p_requests text[]
) RETURNS TABLE (outcome text, version bigint, now_ms double precision, held jsonb) LANGUAGE plpgsql AS $$
DECLARE
  cur record;
  t double precision := ${s}.now_ms();
  actual bigint := 0;
  listed double precision := CASE WHEN p_archive THEN t END;
  created boolean := false;
BEGIN
  SELECT h.version, h.write_id, h.expires_at INTO cur FROM ${s}.tasks h
    WHERE h.tenant_id = p_tenant AND h.task_id = p_task FOR UPDATE;
  IF FOUND AND (cur.expires_at IS NULL OR cur.expires_at > t) THEN
    actual := cur.version;
  END IF;
  IF actual <> p_expected OR (p_expected_write_id IS NOT NULL AND cur.write_id IS DISTINCT FROM p_expected_write_id) THEN
    RETURN QUERY SELECT 'conflict'::text, actual, t, NULL::jsonb;
    RETURN;
  END IF;
  IF NOT FOUND THEN
    INSERT INTO ${s}.tasks AS h (tenant_id, task_id, version, write_id, owner_id, session_id, position, expires_at, lease_until,
        deleting, request_count, data, unarchived_at)
      VALUES (p_tenant, p_task, 1, p_write_id, p_owner, p_session, nextval('${s}.task_order'), p_expires_at, p_lease_until,
        p_deleting, p_request_count, p_data, listed)
      ON CONFLICT (tenant_id, task_id) DO NOTHING;
    IF NOT FOUND THEN
      -- Another create of the id committed first (this one waited for it on the key).
      RETURN QUERY SELECT 'conflict'::text, coalesce((SELECT h.version FROM ${s}.tasks h
        WHERE h.tenant_id = p_tenant AND h.task_id = p_task), 0), t, NULL::jsonb;
      RETURN;
    END IF;
    created := true;
  END IF;
  IF p_claim IS NOT NULL THEN
    INSERT INTO ${s}.idempotency_keys AS k (tenant_id, key, expires_at, entry)
      VALUES (p_tenant, p_claim->>'key', (p_claim->>'expiresAt')::double precision, p_claim)
      ON CONFLICT (tenant_id, key) DO UPDATE SET expires_at = excluded.expires_at, entry = excluded.entry
        WHERE k.expires_at <= t;
    IF NOT FOUND THEN
      -- A live entry holds the key (ON CONFLICT locked its row, so it stays as read here).
      IF created THEN
        DELETE FROM ${s}.tasks h WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
      END IF;
      RETURN QUERY SELECT 'taken'::text, actual, t, (SELECT k.entry FROM ${s}.idempotency_keys k
        WHERE k.tenant_id = p_tenant AND k.key = p_claim->>'key');
      RETURN;
    END IF;
  END IF;
  IF actual > 0 THEN
    UPDATE ${s}.tasks h SET version = p_expected + 1, write_id = p_write_id, owner_id = p_owner, session_id = p_session,
        expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting, request_count = p_request_count, data = p_data,
        unarchived_at = coalesce(listed, h.unarchived_at)
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  ELSIF NOT created THEN
    -- Created again over an expired task the sweep has not reached: nothing of the old one stays.
    DELETE FROM ${s}.requests r WHERE r.tenant_id = p_tenant AND r.task_id = p_task;
    DELETE FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task;
    UPDATE ${s}.tasks h SET version = 1, write_id = p_write_id, owner_id = p_owner, session_id = p_session,
        position = nextval('${s}.task_order'), expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting,
        request_count = p_request_count, data = p_data, unarchived_at = listed
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  END IF;
  IF cardinality(p_seqs) > 0 THEN
    INSERT INTO ${s}.requests AS r (tenant_id, task_id, seq, request_id, data)
      SELECT p_tenant, p_task, u.seq, u.request_id, u.data FROM unnest(p_seqs, p_request_ids, p_requests) AS u(seq, request_id, data)
      ON CONFLICT (tenant_id, task_id, seq) DO UPDATE SET request_id = excluded.request_id, data = excluded.data;
  END IF;
  RETURN QUERY SELECT 'ok'::text, p_expected + 1, t, NULL::jsonb;
END $$;

CREATE OR REPLACE FUNCTION ${s}.sweep_expired(p_batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  t double precision := ${s}.now_ms();
  budget integer := p_batch;
  removed integer;
  task record;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('teal-agent-server sweep ${s}', 0)) THEN RETURN -1; END IF;
  -- Expired entries first, oldest first; one a commit is claiming again right now is skipped (locked).
  DELETE FROM ${s}.idempotency_keys k WHERE k.expires_at <= t AND (k.tenant_id, k.key) IN (
    SELECT x.tenant_id, x.key FROM ${s}.idempotency_keys x WHERE x.expires_at <= t
      ORDER BY x.expires_at LIMIT budget FOR UPDATE SKIP LOCKED);
  GET DIAGNOSTICS removed = ROW_COUNT;
  budget := budget - removed;
  FOR task IN SELECT h.tenant_id, h.task_id FROM ${s}.tasks h WHERE h.expires_at <= t
      ORDER BY h.expires_at LIMIT budget FOR UPDATE SKIP LOCKED LOOP
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
