-- name: duplicate_events
-- reads: source_events, duplicate_keys
-- The rows behind each key held by more than one row of an eval run (duplicate_keys, found by
-- adjacency in the scan), with v1 types mapped (D-1) and a null payload cell read as JSON null
-- (E-6). D-3 decides in Python whether they are one event (same type, JSON-equal payloads) or a
-- conflict that makes the run ungradable; `kept` marks the row that stands for the key: the
-- earliest timestamp, ties broken by content, so the choice never depends on file order (D-3).
-- row_hash is the row's hash as read (scan_rows).
SELECT
    s.run_id,
    s.sequence,
    s.sequence_ok,
    v2_type(s.type) AS type,
    coalesce(s.payload, 'null') AS payload,
    s.ts,
    hash(s.sequence, s.sequence_ok, s.type, s.payload, s.ts) AS row_hash,
    row_number() OVER (
        PARTITION BY s.run_id, s.sequence
        ORDER BY s.ts NULLS LAST, v2_type(s.type), coalesce(s.payload, 'null')
    ) = 1 AS kept
FROM source_events AS s
SEMI JOIN duplicate_keys AS d ON d.run_id = s.run_id AND d.sequence = s.sequence
ORDER BY 1, 2, 4, 5
