-- name: duplicate_keys
-- (runId, sequence) keys held by more than one row of an eval run (D-3); usually none.
SELECT run_id, sequence
FROM source_events
WHERE sequence_ok AND run_id IN (SELECT run_id FROM eval_run_ids)
GROUP BY run_id, sequence
HAVING count(*) > 1
