-- name: explain_judge_calls
-- reads: trial_segments, span_usage
-- Judge calls per trial segment, for `evalbatch explain` (D-6): the provider.usage events in the
-- segment but outside its bracket (E-12: strictly between the bracket's start and end is inside;
-- a segment without a bracket has only judge calls). They are left out of efficiency (RFC 0244
-- §C) and counted in cost with the rules of trial_usage (D-14: cache hits cost 0, other
-- currencies and invalid costs are left out of the USD sum). Reads trial_segments, span_usage.
SELECT
    t.run_id,
    t.segment_no,
    count(*) AS judge_calls,
    CAST(coalesce(sum(u.input_tokens), 0) AS BIGINT) AS judge_input_tokens,
    CAST(coalesce(sum(u.output_tokens), 0) AS BIGINT) AS judge_output_tokens,
    CAST(sum(
        CASE
            WHEN u.cost_state = 'ok' AND u.currency_usd
            THEN CASE WHEN u.cache_hit THEN 0 ELSE u.cost_usd_estimate END
        END
    ) AS DECIMAL(38, 18)) AS judge_cost_usd
FROM trial_segments AS t
JOIN span_usage AS u ON u.run_id = t.run_id AND u.segment_no = t.segment_no
WHERE NOT coalesce(u.sequence > t.bracket_start_seq AND u.sequence < t.bracket_end_seq, false)
GROUP BY t.run_id, t.segment_no
