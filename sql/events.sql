-- name: events
-- One row per event of an eval run: duplicates collapsed to the earliest timestamp (D-3), payload
-- fixes applied (repeated keys resolved last-wins, NaN/Infinity refused: D-7). Ties on timestamp are
-- broken by content, so the choice never depends on file order.
-- Reads: raw_events, payload_fixes (run_id, sequence, payload, payload_json).
SELECT
    r.run_id,
    r.sequence,
    r.type,
    r.graded_type,
    coalesce(f.payload, r.payload) AS payload,
    coalesce(f.payload_json, r.payload_json) AS payload_json,
    r.ts
FROM raw_events AS r
LEFT JOIN payload_fixes AS f
    ON f.run_id = r.run_id AND f.sequence = r.sequence AND f.original = r.payload
WHERE r.sequence_ok
QUALIFY row_number() OVER (
    PARTITION BY r.run_id, r.sequence ORDER BY r.ts NULLS LAST, r.type, r.payload
) = 1
