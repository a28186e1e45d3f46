-- name: verify_judge_usage
-- reads: source_events, verify_trials
-- Judge calls per trial, for `evalbatch verify` (D-6): the provider.usage events inside a trial's
-- segment but outside its bracket (E-12: strictly between the bracket's start and end is inside),
-- with their token counts (a count that is not an integral number >= 0 counts 0, §2.2). verify
-- uses them only to say why a host's efficiency differs: a host that counted judge calls (RFC
-- 0244 §C excludes them) reports exactly the in-bracket figures plus these. Reads the view
-- source_events and the table verify_trials (run_id, segment_no, segment_start_seq, scored_seq,
-- bracket_start_seq, bracket_end_seq), one row per counted trial.
WITH usage AS (
    SELECT
        run_id,
        sequence,
        CASE WHEN coalesce(json_valid(payload), false)
            THEN json_number(json_extract(payload, '$.inputTokens')) END AS input_tokens,
        CASE WHEN coalesce(json_valid(payload), false)
            THEN json_number(json_extract(payload, '$.outputTokens')) END AS output_tokens
    FROM source_events
    WHERE type = 'provider.usage' AND sequence_ok AND run_id IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY run_id, sequence ORDER BY ts NULLS LAST, payload
    ) = 1
)
SELECT
    t.run_id,
    t.segment_no,
    count(*) AS judge_calls,
    CAST(sum(CASE WHEN u.input_tokens >= 0 AND u.input_tokens = floor(u.input_tokens)
        THEN u.input_tokens ELSE 0 END) AS DOUBLE) AS judge_input_tokens,
    CAST(sum(CASE WHEN u.output_tokens >= 0 AND u.output_tokens = floor(u.output_tokens)
        THEN u.output_tokens ELSE 0 END) AS DOUBLE) AS judge_output_tokens
FROM verify_trials AS t
JOIN usage AS u
    ON u.run_id = t.run_id
    AND u.sequence > t.segment_start_seq
    AND u.sequence < t.scored_seq
WHERE t.bracket_start_seq IS NULL
    OR u.sequence <= t.bracket_start_seq
    OR u.sequence >= t.bracket_end_seq
GROUP BY t.run_id, t.segment_no
