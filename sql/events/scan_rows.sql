-- name: scan_rows
-- reads: source_events, eval_run_ids
-- The rows of the eval runs (eval_run_ids, §2.1, E-1) as read (a view, read once by
-- event_scan), each with its row hash for its run's events fingerprint (provenance,
-- E-50, E-54: the hash run_fingerprints takes over the same rows). Duplicate rows are all here (D-3).
SELECT
    run_id, sequence, sequence_ok, type, payload, ts,
    hash(sequence, sequence_ok, type, payload, ts) AS row_hash
FROM source_events
WHERE run_id IN (SELECT run_id FROM eval_run_ids)
