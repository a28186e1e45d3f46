-- name: trial_usage
-- Per trial segment: efficiency counts inside the bracket (§2.2, RFC 0244 §C: every agent's
-- agent.tool-called and every provider.usage between the bracket's start and end) and the USD cost
-- of every provider.usage in the segment, judge calls included (D-6, D-14). Cache hits cost 0;
-- other currencies and invalid costs are left out of the USD sum. Costs are exact decimals.
WITH placed AS (
    SELECT
        t.run_id,
        t.segment_no,
        u.type,
        u.sequence > t.bracket_start_seq AND u.sequence < t.bracket_end_seq AS in_bracket,
        u.input_tokens,
        u.output_tokens,
        CASE
            WHEN u.type = 'provider.usage' AND u.cost_state = 'ok' AND u.currency_usd
            THEN CASE WHEN u.cache_hit THEN 0 ELSE u.cost_usd_estimate END
        END AS usd
    FROM trial_segments AS t
    LEFT JOIN span_events AS u
        ON u.run_id = t.run_id
        AND u.segment_no = t.segment_no
        AND u.type IN ('agent.tool-called', 'provider.usage')
)
SELECT
    run_id,
    segment_no,
    count(*) FILTER (WHERE type = 'agent.tool-called' AND in_bracket) AS tool_call_count,
    count(*) FILTER (WHERE type = 'provider.usage' AND in_bracket) AS model_call_count,
    CAST(coalesce(sum(input_tokens) FILTER (WHERE type = 'provider.usage' AND in_bracket), 0)
        AS BIGINT) AS input_tokens,
    CAST(coalesce(sum(output_tokens) FILTER (WHERE type = 'provider.usage' AND in_bracket), 0)
        AS BIGINT) AS output_tokens,
    CAST(coalesce(sum(usd), 0) AS DECIMAL(38, 18)) AS usage_cost_usd
FROM placed
GROUP BY run_id, segment_no
