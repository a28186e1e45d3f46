-- name: run_cost_source
-- reads: usage_events
-- Runs whose log carries at least one provider.usage with a non-negative costEstimateUsd,
-- whatever its currency or cacheHit (D-14): for these, task costs come from provider.usage;
-- for the others, from eval.scored.costUsd.
SELECT DISTINCT run_id
FROM usage_events
WHERE cost_state = 'ok'
