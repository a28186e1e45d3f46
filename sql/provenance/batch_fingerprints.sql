-- name: batch_fingerprints
-- run_fingerprints for the eval runs of one batch, without reading the files again (issue 8
-- provenance, E-50): the row hashes the events pass kept for every row it read (row_hashes),
-- the rows behind a duplicated key (D-3) included. Equal to run_fingerprints over the same rows.
SELECT run_id, concat(count(*), ':', sum(row_hash), ':', bit_xor(row_hash)) AS fingerprint
FROM row_hashes
GROUP BY run_id
