-- name: run_fingerprints
-- reads: source_events
-- A fingerprint of each run's rows as grading reads them (provenance, E-54; E-50
-- incremental runs): their count, the sum and the xor of DuckDB row hashes over sequence, type, payload and
-- timestamp. Order-free, so the same events re-exported in other files or another order keep it.
-- Reads the view source_events (the runs of the current batch).
SELECT
    run_id,
    concat(count(*), ':', sum(h), ':', bit_xor(h)) AS fingerprint
FROM (
    SELECT run_id, hash(sequence, sequence_ok, type, payload, ts) AS h FROM source_events
)
GROUP BY run_id
