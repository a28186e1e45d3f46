-- name: verify_host_events
-- reads: source_events
-- The host's own eval record, for `evalbatch verify` (CONTRACT §8): one row per eval.started,
-- eval.scored and eval.completed event with its payload text. Rows repeating a (runId, sequence)
-- are one event (D-3): the earliest timestamp is kept, ties broken by content. verify parses
-- the few fields it reads (scores, verdicts, counts, trialIndex, scoreLabel, evaluatorType) in
-- Python, strictly (D-7: NaN and Infinity are not JSON). Reads the view source_events.
SELECT run_id, sequence, type, payload
FROM source_events
WHERE type IN ('eval.started', 'eval.scored', 'eval.completed')
    AND sequence_ok
    AND run_id IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY run_id, sequence ORDER BY ts NULLS LAST, payload
) = 1
