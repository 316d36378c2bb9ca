/**
 * Migration 4: `commit_task` (the 17-argument version of migrations/0003-idempotency-keys.sql.ts)
 * gains a first path for the usual commit, a follow-on claiming no Idempotency-Key: the
 * compare-and-set is the UPDATE's own condition (version, writeId, not expired), so the header is
 * read, locked and written by one statement instead of a SELECT ... FOR UPDATE and an UPDATE. A
 * concurrent commit of the task is waited for on the row, as before, and then fails the condition
 * (its version is another). When the condition fails nothing was written, and the commit takes the
 * path it always took, which tells a conflict from an expired or missing header. Replaced in place
 * (the same signature and answers), so replicas of the previous release, during a rolling deploy,
 * run it too. Its answer 'ok' is returned as the function's output columns (RETURN NEXT), not by a
 * query run for it (RETURN QUERY SELECT: an executor started and ended per commit). Measured in
 * docs/performance.md (the PostgreSQL turn).
 */
export const MIGRATION_0004 = {
  version: 4,
  name: 'commit-first-path',
  sql: (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.commit_task(
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
  written boolean := false;
BEGIN
  IF p_claim IS NULL AND p_expected > 0 THEN
    -- The usual follow-on commit: the compare-and-set in the UPDATE itself (a concurrent commit is
    -- waited for, then its version fails the condition); when it writes nothing, the path below decides.
    UPDATE ${s}.tasks h SET version = p_expected + 1, write_id = p_write_id, owner_id = p_owner, session_id = p_session,
        expires_at = p_expires_at, lease_until = p_lease_until, deleting = p_deleting, request_count = p_request_count, data = p_data,
        unarchived_at = coalesce(listed, h.unarchived_at)
      WHERE h.tenant_id = p_tenant AND h.task_id = p_task AND h.version = p_expected
        AND (p_expected_write_id IS NULL OR h.write_id = p_expected_write_id) AND (h.expires_at IS NULL OR h.expires_at > t);
    written := FOUND;
  END IF;
  IF NOT written THEN
    -- Read and lock the header first: a create, a claim, or a compare-and-set that failed above.
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
  END IF;
  IF cardinality(p_seqs) > 0 THEN
    INSERT INTO ${s}.requests AS r (tenant_id, task_id, seq, request_id, data)
      SELECT p_tenant, p_task, u.seq, u.request_id, u.data FROM unnest(p_seqs, p_request_ids, p_requests) AS u(seq, request_id, data)
      ON CONFLICT (tenant_id, task_id, seq) DO UPDATE SET request_id = excluded.request_id, data = excluded.data;
  END IF;
  outcome := 'ok'; version := p_expected + 1; now_ms := t; held := NULL;
  RETURN NEXT;
END $$;
`,
};
