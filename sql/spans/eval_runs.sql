-- name: eval_runs
-- One row per eval run (§2.1): where the eval starts and ends, how often it started, and the
-- eval.started fields grading reads (suite id and version, modes, trialCount, baselineRunId).
WITH starts AS (
    SELECT
        run_id,
        min(sequence) AS start_seq,
        count(*) AS started_count,
        arg_min(suite_id, sequence) AS suite_id,
        arg_min(suite_version, sequence) AS suite_version,
        arg_min(live_shadow, sequence) AS live_shadow,
        arg_min(trial_count_present, sequence) AS trial_count_present,
        arg_min(trial_count, sequence) AS trial_count,
        arg_min(baseline_run_id, sequence) AS baseline_run_id
    FROM started_events
    WHERE sequence IS NOT NULL
    GROUP BY run_id
),
ends AS (
    SELECT e.run_id, min(e.sequence) AS end_seq
    FROM events AS e JOIN starts AS s ON e.run_id = s.run_id
    WHERE e.type = 'eval.completed' AND e.sequence > s.start_seq
    GROUP BY e.run_id
)
SELECT s.*, n.end_seq
FROM starts AS s LEFT JOIN ends AS n ON n.run_id = s.run_id
