-- name: scored_events
-- reads: events
-- One row per eval.scored (§2.2): taskId, trialIndex (a non-negative integral JSON number, 1.0
-- counts, 1.0000000000000001 does not: D-5), and the host's own record: score in [0, 1], passed,
-- latencyMs, costUsd as an exact decimal (D-11: only a JSON number is a number; latency and cost
-- above their limits are not used, E-77). Read from `events`.
WITH numbers AS (
    SELECT
        run_id,
        sequence,
        ts,
        f,
        trial_index_text,
        json_number(scored_field(f, 'trialIndex')) AS index_number,
        json_number(scored_field(f, 'score')) AS score_number,
        json_number(scored_field(f, 'latencyMs')) AS latency_number,
        json_number(scored_field(f, 'costUsd')) AS cost_number
    FROM events
    WHERE type = 'eval.scored'
)
SELECT
    run_id,
    sequence,
    ts,
    json_string(scored_field(f, 'taskId')) AS task_id,
    scored_field(f, 'trialIndex') IS NOT NULL AS trial_index_present,
    CASE
        WHEN index_number IS NULL OR index_number < 0 OR index_number <> floor(index_number)
        THEN NULL
        WHEN regexp_matches(coalesce(trial_index_text, ''), '^[0-9]+\.[0-9]*[1-9][0-9]*$')
        THEN NULL
        ELSE least(index_number, 1e15)::BIGINT
    END AS trial_index,
    CASE WHEN score_number BETWEEN 0 AND 1 THEN score_number END AS host_score,
    CASE
        WHEN scored_field(f, 'passed') IN ('true', 'false') THEN scored_field(f, 'passed') = 'true'
    END AS host_passed,
    CASE WHEN latency_number BETWEEN 0 AND max_latency_ms() THEN latency_number END AS host_latency_ms,
    scored_field(f, 'costUsd') IS NOT NULL AS host_cost_present,
    CASE
        WHEN cost_number BETWEEN 0 AND max_cost_usd()
        THEN coalesce(
            TRY_CAST(CAST(scored_field(f, 'costUsd') AS VARCHAR) AS DECIMAL(38, 18)),
            cost_number::DECIMAL(38, 18)
        )
    END AS host_cost_usd
FROM numbers
