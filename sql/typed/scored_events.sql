-- name: scored_events
-- One row per eval.scored (§2.2): taskId, trialIndex (a non-negative integral JSON number, 1.0
-- counts, 1.0000000000000001 does not: D-5), and the host's own record: score in [0, 1], passed,
-- latencyMs, costUsd as an exact decimal (D-11: only a JSON number is a number; latency and cost
-- above their limits are not used, E-77). Read from `event_scan`,
-- which reads the typed fields off each payload's one parse.
SELECT
    run_id,
    sequence,
    ts,
    task_id,
    trial_index_present,
    trial_index,
    host_score,
    host_passed,
    host_latency_ms,
    host_cost_present,
    cost_usd AS host_cost_usd
FROM event_scan
WHERE type = 'eval.scored'
