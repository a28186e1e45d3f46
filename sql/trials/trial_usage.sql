-- name: trial_usage
-- Per trial segment: efficiency counts inside the bracket (§2.2, RFC 0244 §C: every agent's
-- agent.tool-called and every provider.usage between the bracket's start and end) and the USD cost
-- of every provider.usage in the segment, judge calls included (D-6, D-14). Cache hits cost 0;
-- other currencies and invalid costs are left out of the USD sum. Costs are exact decimals.
WITH calls AS (
    SELECT run_id, segment_no, count(*) AS tool_call_count
    FROM trial_calls
    GROUP BY run_id, segment_no
),
usage AS (
    SELECT
        u.run_id,
        u.segment_no,
        u.sequence > t.bracket_start_seq AND u.sequence < t.bracket_end_seq AS in_bracket,
        u.input_tokens,
        u.output_tokens,
        CASE
            WHEN u.cost_state = 'ok' AND u.currency_usd
            THEN CASE WHEN u.cache_hit THEN 0 ELSE u.cost_usd_estimate END
        END AS usd
    FROM trial_segments AS t
    JOIN span_usage AS u ON u.run_id = t.run_id AND u.segment_no = t.segment_no
),
usage_sums AS (
    SELECT
        run_id,
        segment_no,
        count(*) FILTER (WHERE in_bracket) AS model_call_count,
        sum(input_tokens) FILTER (WHERE in_bracket) AS input_tokens,
        sum(output_tokens) FILTER (WHERE in_bracket) AS output_tokens,
        sum(usd) AS usage_cost_usd
    FROM usage
    GROUP BY run_id, segment_no
)
SELECT
    t.run_id,
    t.segment_no,
    coalesce(c.tool_call_count, 0) AS tool_call_count,
    coalesce(u.model_call_count, 0) AS model_call_count,
    CAST(coalesce(u.input_tokens, 0) AS BIGINT) AS input_tokens,
    CAST(coalesce(u.output_tokens, 0) AS BIGINT) AS output_tokens,
    CAST(coalesce(u.usage_cost_usd, 0) AS DECIMAL(38, 18)) AS usage_cost_usd
FROM trial_segments AS t
LEFT JOIN calls AS c ON c.run_id = t.run_id AND c.segment_no = t.segment_no
LEFT JOIN usage_sums AS u ON u.run_id = t.run_id AND u.segment_no = t.segment_no
