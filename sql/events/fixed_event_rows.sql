-- name: fixed_event_rows
-- The events whose payload DuckDB's lenient parser reads differently from JSON (NaN/Infinity are
-- not JSON; a repeated key keeps its last value: D-7), with the payload as Python re-read it.
SELECT e.run_id, e.sequence, e.sequence_ok, e.type, f.payload, e.ts, e.row_hash
FROM events AS e
JOIN payload_fixes AS f ON f.run_id = e.run_id AND f.sequence = e.sequence
