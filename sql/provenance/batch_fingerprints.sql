-- name: batch_fingerprints
-- reads: event_scan, duplicate_keys, duplicate_row_hashes
-- run_fingerprints for the eval runs of one batch, without reading the files again
-- (provenance, E-50, E-54): the row hashes the events pass kept for every key read once, plus the
-- hashes of all rows behind a duplicated key (D-3: duplicate_row_hashes), which the events pass
-- collapsed. Equal to run_fingerprints over the same rows.
WITH row_hashes AS (
    SELECT e.run_id, e.row_hash AS h
    FROM event_scan AS e
    ANTI JOIN duplicate_keys AS d ON d.run_id = e.run_id AND d.sequence = e.sequence
    UNION ALL
    SELECT run_id, row_hash AS h FROM duplicate_row_hashes
)
SELECT run_id, concat(count(*), ':', sum(h), ':', bit_xor(h)) AS fingerprint
FROM row_hashes
GROUP BY run_id
