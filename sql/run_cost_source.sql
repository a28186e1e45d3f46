-- name: run_cost_source
-- Runs whose log carries at least one provider.usage with a non-negative costEstimateUsd,
-- whatever its currency or cacheHit (D-14): for these, task costs come from provider.usage;
-- for the others, from eval.scored.costUsd.
SELECT DISTINCT e.run_id
FROM events AS e
JOIN eval_runs AS r ON r.run_id = e.run_id
WHERE e.type = 'provider.usage'
    AND CASE
        WHEN e.payload_json
        THEN json_type(e.payload, '$.costEstimateUsd') IN ('BIGINT', 'UBIGINT', 'DOUBLE')
            AND TRY_CAST(json_extract(e.payload, '$.costEstimateUsd') AS DOUBLE) >= 0
        ELSE false
    END
