-- name: duplicate_events
-- The rows behind each duplicated key, with v1 types mapped (D-1). D-3 decides in Python whether
-- they are one event (same type, JSON-equal payloads) or a conflict that makes the run ungradable.
SELECT s.run_id, s.sequence, v2_type(s.type) AS type, coalesce(s.payload, 'null') AS payload
FROM source_events AS s
SEMI JOIN duplicate_keys AS d ON d.run_id = s.run_id AND d.sequence = s.sequence
ORDER BY 1, 2, 3, 4
