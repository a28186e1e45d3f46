-- name: usage_events
-- reads: events
-- One row per provider.usage (§2.2, D-14): token counts (null unless an integral JSON number
-- 0..max_tokens(): D-11, E-77), the cost's state (absent | ok | invalid: not a number in 0..max_cost_usd(),
-- E-77) and exact decimal value, whether the currency is USD (absent means USD) and whether it
-- was a cache hit. Read from `events`.
WITH numbers AS (
    SELECT
        run_id,
        sequence,
        f,
        json_number(usage_field(f, 'inputTokens')) AS input_number,
        json_number(usage_field(f, 'outputTokens')) AS output_number,
        json_number(usage_field(f, 'costEstimateUsd')) AS cost_number
    FROM events
    WHERE type = 'provider.usage'
)
SELECT
    run_id,
    sequence,
    CASE
        WHEN input_number BETWEEN 0 AND max_tokens() AND input_number = floor(input_number)
        THEN input_number::BIGINT
    END AS input_tokens,
    CASE
        WHEN output_number BETWEEN 0 AND max_tokens() AND output_number = floor(output_number)
        THEN output_number::BIGINT
    END AS output_tokens,
    CASE
        WHEN usage_field(f, 'costEstimateUsd') IS NULL THEN 'absent'
        WHEN cost_number BETWEEN 0 AND max_cost_usd() THEN 'ok'
        ELSE 'invalid'
    END AS cost_state,
    CASE
        WHEN cost_number BETWEEN 0 AND max_cost_usd()
        THEN coalesce(
            TRY_CAST(CAST(usage_field(f, 'costEstimateUsd') AS VARCHAR) AS DECIMAL(38, 18)),
            cost_number::DECIMAL(38, 18)
        )
    END AS cost_usd_estimate,
    usage_field(f, 'currency') IS NULL
        OR usage_field(f, 'currency') = 'null'
        OR upper(json_string(usage_field(f, 'currency'))) = 'USD' AS currency_usd,
    coalesce(CAST(usage_field(f, 'cacheHit') AS VARCHAR) = 'true', false) AS cache_hit
FROM numbers
