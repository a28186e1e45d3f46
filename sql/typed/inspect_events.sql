-- name: inspect_events
-- reads: events
-- One row per event of the two vendor types an ingested Inspect log ends with (E-146): its
-- names (evalbatch.inspect.eval: task, model, logFile, and erroredLeftOut, the errored samples
-- left out at ingest, E-147) and each trial's sample (evalbatch.inspect.sample: the taskId and
-- trialIndex of its eval.scored, the sample id, the epoch, from 1, and errored, true when the
-- sample errored in Inspect, E-147). Each field only when it has its type: a string, an integral
-- number (a sample id may be either: an integer is read as its text), or `true` (errored is
-- false otherwise). Read from `events`; no other event log holds these types, so for one the
-- relation is empty.
WITH names AS (
    SELECT
        run_id,
        sequence,
        type,
        type = 'evalbatch.inspect.eval' AS of_eval,
        f
    FROM events
    WHERE type IN ('evalbatch.inspect.eval', 'evalbatch.inspect.sample')
),
fields AS (
    SELECT
        run_id,
        sequence,
        type,
        CASE WHEN of_eval THEN inspect_eval_field(f, 'task') END AS task,
        CASE WHEN of_eval THEN inspect_eval_field(f, 'model') END AS model,
        CASE WHEN of_eval THEN inspect_eval_field(f, 'logFile') END AS log_file,
        CASE WHEN of_eval THEN json_number(inspect_eval_field(f, 'erroredLeftOut')) END AS left_out,
        CASE WHEN NOT of_eval THEN inspect_sample_field(f, 'taskId') END AS task_id,
        CASE WHEN NOT of_eval THEN json_number(inspect_sample_field(f, 'trialIndex')) END AS trial,
        CASE WHEN NOT of_eval THEN inspect_sample_field(f, 'sampleId') END AS sample_id,
        CASE WHEN NOT of_eval THEN json_number(inspect_sample_field(f, 'epoch')) END AS epoch,
        NOT of_eval AND coalesce(inspect_sample_field(f, 'errored') = 'true', false) AS errored
    FROM names
)
SELECT
    run_id,
    sequence,
    type,
    json_string(task) AS task_name,
    json_string(model) AS model,
    json_string(log_file) AS log_file,
    CASE
        WHEN left_out >= 0 AND left_out = floor(left_out) THEN least(left_out, 1e15)::BIGINT
    END AS errored_left_out,
    json_string(task_id) AS task_id,
    CASE WHEN trial >= 0 AND trial = floor(trial) THEN least(trial, 1e15)::BIGINT END AS trial_index,
    coalesce(
        json_string(sample_id),
        CASE
            WHEN json_number(sample_id) = floor(json_number(sample_id))
            THEN CAST(sample_id AS VARCHAR)
        END
    ) AS sample_id,
    CASE WHEN epoch >= 1 AND epoch = floor(epoch) THEN least(epoch, 1e15)::BIGINT END AS epoch,
    errored
FROM fields
