/**
 * Migration 2: the archive index (StateStore.listUnarchived; the schema in postgres-keys.ts). `s`
 * is the schema, already checked against SCHEMA_NAME.
 *
 * - `tasks.unarchived_at`: when the task was last committed by a store keeping the index (the
 *   database's clock, epoch ms), or null while it is not listed (never listed, or taken by the
 *   archive since: markArchived sets it back to null). A column of the header row, so the commit
 *   writes it in the same statement, and the deletion's and the sweep's delete of the row unlist it.
 *   Added null, so the table is not rewritten.
 * - `tasks_unarchived`: the partial index the listing pages through, as `tasks_lease` is for
 *   leases. It holds only listed rows (none when the migration runs), but building it reads the
 *   table once under a lock that holds commits back meanwhile.
 * - `commit_task` gains `p_archive` (a new overload, 16 arguments): when true, the commit lists the
 *   task at its own time; when false it leaves the column as it is (a create: null). The 15-argument
 *   version of migration 1 stays, unchanged, for the replicas of the previous release still running
 *   during a rolling deploy: their commits leave the column as it is.
 */
export const MIGRATION_0002 = {
  version: 2,
  name: 'archive-index',
  sql: (s: string) => `
ALTER TABLE ${s}.tasks ADD COLUMN unarchived_at double precision;
CREATE INDEX tasks_unarchived ON ${s}.tasks (unarchived_at, tenant_id, task_id) WHERE unarchived_at IS NOT NULL;

CREATE FUNCTION ${s}.commit_task(
  p_tenant text, p_task text, p_expected bigint, p_expected_write_id text, p_write_id text,
  p_owner text, p_session text, p_expires_at bigint, p_lease_until double precision, p_deleting boolean,
  p_request_count integer, p_data text, p_archive boolean, p_seqs integer[], p_request_ids text[], p_requests text[]
) RETURNS TABLE (outcome text, version bigint, now_ms double precision) LANGUAGE plpgsql AS $$
DECLARE
  cur record;
  t double precision := ${s}.now_ms();
  actual bigint := 0;
  listed double precision := CASE WHEN p_archive THEN t END;
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
        expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting, request_count = p_request_count, data = p_data,
        unarchived_at = coalesce(listed, h.unarchived_at)
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  ELSIF FOUND THEN
    -- Created again over an expired task the sweep has not reached: nothing of the old one stays.
    DELETE FROM ${s}.requests r WHERE r.tenant_id = p_tenant AND r.task_id = p_task;
    DELETE FROM ${s}.stream_events e WHERE e.tenant_id = p_tenant AND e.task_id = p_task;
    UPDATE ${s}.tasks h SET version = 1, write_id = p_write_id, owner_id = p_owner, session_id = p_session,
        position = nextval('${s}.task_order'), expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting,
        request_count = p_request_count, data = p_data, unarchived_at = listed
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task;
  ELSE
    INSERT INTO ${s}.tasks AS h (tenant_id, task_id, version, write_id, owner_id, session_id, position, expires_at, lease_until,
        deleting, request_count, data, unarchived_at)
      VALUES (p_tenant, p_task, 1, p_write_id, p_owner, p_session, nextval('${s}.task_order'), p_expires_at, p_lease_until,
        p_deleting, p_request_count, p_data, listed)
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
`,
};
