-- name: eval_runs
-- One row per eval run (§2.1): where the eval starts and ends, how often it started, and the
-- eval.started fields grading reads (suite id and version, modes, trialCount, baselineRunId).
WITH marks AS (
    SELECT
        run_id,
        min(sequence) FILTER (WHERE type = 'eval.started') AS start_seq,
        count(*) FILTER (WHERE type = 'eval.started') AS started_count
    FROM events
    GROUP BY run_id
),
ends AS (
    SELECT e.run_id, min(e.sequence) AS end_seq
    FROM events AS e JOIN marks AS m ON e.run_id = m.run_id
    WHERE e.type = 'eval.completed' AND e.sequence > m.start_seq
    GROUP BY e.run_id
),
started AS (
    SELECT
        e.run_id,
        e.payload_json AS started_payload_json,
        json_extract(
            CASE WHEN e.payload_json THEN e.payload END,
            ['$.suiteId', '$.suiteVersion', '$.modes', '$.trialCount', '$.baselineRunId']
        ) AS f
    FROM events AS e JOIN marks AS m ON e.run_id = m.run_id AND e.sequence = m.start_seq
)
SELECT
    m.run_id,
    m.start_seq,
    m.started_count,
    n.end_seq,
    CASE WHEN json_type(s.f[1]) = 'VARCHAR' THEN s.f[1] ->> '$' END AS suite_id,
    CASE WHEN json_type(s.f[2]) = 'VARCHAR' THEN s.f[2] ->> '$' END AS suite_version,
    coalesce(
        json_type(s.f[3]) = 'ARRAY'
        AND list_contains(json_extract_string(s.f[3], '$[*]'), 'live-shadow'),
        false
    ) AS live_shadow,
    s.f[4] IS NOT NULL AS trial_count_present,
    CASE
        WHEN json_type(s.f[4]) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
            AND TRY_CAST(s.f[4] AS DOUBLE) >= 1
            AND TRY_CAST(s.f[4] AS DOUBLE) = floor(TRY_CAST(s.f[4] AS DOUBLE))
        THEN least(TRY_CAST(s.f[4] AS DOUBLE), 1e9)::BIGINT
    END AS trial_count,
    CASE WHEN json_type(s.f[5]) = 'VARCHAR' THEN s.f[5] ->> '$' END AS baseline_run_id
FROM marks AS m
LEFT JOIN ends AS n ON n.run_id = m.run_id
LEFT JOIN started AS s ON s.run_id = m.run_id
WHERE m.started_count > 0
