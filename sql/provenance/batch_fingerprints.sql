-- name: batch_fingerprints
-- run_fingerprints for the eval runs of one batch, without reading the files again (issue 8
-- provenance, E-50): the row hashes the events pass kept for every key read once, plus the
-- hashes of all rows behind a duplicated key (D-3), which the events pass collapsed. Equal to
-- run_fingerprints over the same rows.
WITH row_hashes AS (
    SELECT e.run_id, e.row_hash AS h
    FROM events AS e
    ANTI JOIN duplicate_keys AS d ON d.run_id = e.run_id AND d.sequence = e.sequence
    UNION ALL
    SELECT s.run_id, hash(s.sequence, s.sequence_ok, s.type, s.payload, s.ts) AS h
    FROM source_events AS s
    SEMI JOIN duplicate_keys AS d ON d.run_id = s.run_id AND d.sequence = s.sequence
)
SELECT run_id, concat(count(*), ':', sum(h), ':', bit_xor(h)) AS fingerprint
FROM row_hashes
GROUP BY run_id
