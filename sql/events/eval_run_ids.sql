-- name: eval_run_ids
-- reads: source_events
-- The runs that are eval runs: a runId with an eval.started (§2.1, E-1). Read from the type column
-- alone, so other runs' payloads are never touched.
SELECT DISTINCT run_id
FROM source_events
WHERE type = 'eval.started' AND run_id IS NOT NULL
