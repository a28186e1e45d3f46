-- name: usage_events
-- One row per provider.usage (§2.2, D-14): token counts (null unless an integral JSON number
-- 0..max_tokens(): D-11, E-77), the cost's state (absent | ok | invalid: not a number in 0..max_cost_usd(),
-- E-77) and exact decimal value, whether the currency is USD (absent means USD) and whether it
-- was a cache hit. Read from `event_scan`,
-- which reads the typed fields off each payload's one parse.
SELECT
    run_id,
    sequence,
    input_tokens,
    output_tokens,
    cost_state,
    cost_usd AS cost_usd_estimate,
    currency_usd,
    cache_hit
FROM event_scan
WHERE type = 'provider.usage'
