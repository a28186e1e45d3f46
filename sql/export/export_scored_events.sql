-- name: export_scored_events
-- reads: source_events
-- Each eval.scored event with its time and payload text, for `evalbatch export otel`: the record
-- time and the host's scoreLabel and evaluatorType (RFC 0244 §E), which the trial table does not
-- keep. Rows repeating a (runId, sequence) are one event (D-3): the earliest timestamp is kept,
-- ties broken by content. Payloads are parsed strictly in Python (D-7). Reads source_events.
-- The time is written only where OTLP's unsigned 64-bit nanoseconds hold it (1970 to 2262, as
-- far as epoch_ns reaches): a timestamp of year 3000 is a record without a time (E-124).
SELECT
    run_id,
    sequence,
    CASE
        WHEN ts BETWEEN TIMESTAMPTZ '1970-01-01 00:00:00+00'
            AND TIMESTAMPTZ '2262-04-11 23:47:16.854775+00'
        THEN epoch_ns(ts)
    END AS time_unix_nano,
    payload
FROM source_events
WHERE v2_type(type) = 'eval.scored'
    AND sequence_ok
    AND run_id IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY run_id, sequence ORDER BY ts NULLS LAST, payload
) = 1
