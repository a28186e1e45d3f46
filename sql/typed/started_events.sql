-- name: started_events
-- One row per eval.started (§2.1): suiteId, suiteVersion, whether modes holds live-shadow (E-2),
-- trialCount (an integral JSON number of at least 1, else null and reported; one above the limit
-- of E-78 reads as max_trials() + 1, so it never sizes anything; a run without its suite is then
-- not graded) and baselineRunId. Read from `event_scan`,
-- which reads the typed fields off each payload's one parse.
SELECT
    run_id,
    sequence,
    suite_id,
    suite_version,
    live_shadow,
    trial_count_present,
    trial_count,
    baseline_run_id
FROM event_scan
WHERE type = 'eval.started'
