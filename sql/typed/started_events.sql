-- name: started_events
-- reads: events
-- One row per eval.started (§2.1): suiteId, suiteVersion, whether modes holds live-shadow (E-2),
-- trialCount (an integral JSON number of at least 1, else null and reported; one above the limit
-- of E-78 reads as max_trials() + 1, so it never sizes anything; a run without its suite is then
-- not graded) and baselineRunId. Read from `events`.
SELECT
    run_id,
    sequence,
    json_string(f[1]) AS suite_id,
    json_string(f[2]) AS suite_version,
    coalesce(
        json_type(f[3]) = 'ARRAY'
        AND list_contains(json_extract_string(f[3], '$[*]'), 'live-shadow'),
        false
    ) AS live_shadow,
    f[4] IS NOT NULL AS trial_count_present,
    CASE
        WHEN json_number(f[4]) >= 1 AND json_number(f[4]) = floor(json_number(f[4]))
        THEN least(json_number(f[4]), max_trials() + 1)::BIGINT
    END AS trial_count,
    json_string(f[5]) AS baseline_run_id
FROM events
WHERE type = 'eval.started'
