-- name: trial_calls
-- reads: trial_calls
-- The trial_calls frame of the SQL stage (evalbatch/extract/segments.py: one row per
-- agent.tool-called inside a trial's bracket, in sequence order: §2.2, §3.3), for the readers
-- that fetch it by query name (`evalbatch explain`). Reads the registered frame trial_calls.
SELECT * FROM trial_calls
