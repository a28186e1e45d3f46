-- name: duplicate_events
-- Rows that share (runId, sequence) with another row. D-3 decides in Python whether they are one
-- event (same type, JSON-equal payloads) or a conflict that makes the run ungradable.
SELECT run_id, sequence, type, payload, payload_json
FROM raw_events
WHERE sequence_ok
QUALIFY count(*) OVER (PARTITION BY run_id, sequence) > 1
ORDER BY run_id, sequence, type, payload
