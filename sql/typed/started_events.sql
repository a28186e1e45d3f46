-- name: started_events
-- reads: events
-- One row per eval.started (§2.1): suiteId, suiteVersion, whether modes holds live-shadow (E-2),
-- trialCount (an integral JSON number of at least 1, else null and reported; one above the limit
-- of E-78 reads as max_trials() + 1, so it never sizes anything; a run without its suite is then
-- not graded) and baselineRunId. Read from `events`.
WITH numbers AS (
    SELECT run_id, sequence, f, json_number(started_field(f, 'trialCount')) AS trial_count_number
    FROM events
    WHERE type = 'eval.started'
)
SELECT
    run_id,
    sequence,
    json_string(started_field(f, 'suiteId')) AS suite_id,
    json_string(started_field(f, 'suiteVersion')) AS suite_version,
    coalesce(
        json_type(started_field(f, 'modes')) = 'ARRAY'
        AND list_contains(json_extract_string(started_field(f, 'modes'), '$[*]'), 'live-shadow'),
        false
    ) AS live_shadow,
    started_field(f, 'trialCount') IS NOT NULL AS trial_count_present,
    CASE
        WHEN trial_count_number >= 1 AND trial_count_number = floor(trial_count_number)
        THEN least(trial_count_number, max_trials() + 1)::BIGINT
    END AS trial_count,
    json_string(started_field(f, 'baselineRunId')) AS baseline_run_id
FROM numbers
