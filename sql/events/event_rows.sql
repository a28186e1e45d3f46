-- name: event_rows
-- reads: source_events, eval_run_ids, duplicate_keys
-- One row per event of an eval run with its payload text, read from the files on each query (the
-- notebook's event_log): v1 type names mapped to v2 (D-1), a null payload cell read as JSON null
-- (E-6), duplicate rows collapsed to the earliest timestamp (D-3); ties on timestamp are broken
-- by content, so the choice never depends on file order (the row duplicate_events keeps).
WITH rows AS (
    SELECT
        run_id, sequence, sequence_ok, v2_type(type) AS type, coalesce(payload, 'null') AS payload, ts,
        -- the row's hash as read, for its run's events fingerprint (batch_fingerprints)
        hash(sequence, sequence_ok, type, payload, ts) AS row_hash
    FROM source_events
    WHERE run_id IN (SELECT run_id FROM eval_run_ids)
)
SELECT * FROM rows ANTI JOIN duplicate_keys AS d ON d.run_id = rows.run_id AND d.sequence = rows.sequence
UNION ALL
SELECT * FROM (
    SELECT r.* FROM rows AS r
    SEMI JOIN duplicate_keys AS d ON d.run_id = r.run_id AND d.sequence = r.sequence
    QUALIFY row_number() OVER (
        PARTITION BY r.run_id, r.sequence ORDER BY r.ts NULLS LAST, r.type, r.payload
    ) = 1
)
