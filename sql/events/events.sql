-- name: events
-- reads: event_scan
-- One row per event of an eval run, each payload parsed once (§2.2, D-2, D-3): the rows of the
-- stored event_scan after the events pass (a view): a duplicated key's kept row (D-3), the
-- payloads read leniently scanned again as a strict parser re-read them (D-7). `f` holds, as JSON
-- texts, the payload fields its type's grading reads (D-2 aliases), in the order
-- evalbatch/extract/scan_fields.py declares; the per-type relations read them by name
-- (`<type>_field(f, 'name')`, E-134); other types parse nothing.
SELECT
    run_id,
    sequence,
    sequence_ok,
    type,
    ts,
    row_hash,
    graded_type,
    payload_json,
    payload_suspect,
    f,
    exact_payload,
    trial_index_text
FROM event_scan
