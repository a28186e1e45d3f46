-- name: eval_times
-- reads: eval_runs, events
-- When each eval run of the batch ran (the runs table's started and
-- completed times): the timestamp of the eval.started
-- that opens its eval span and of the eval.completed that ends it (§2.1: eval_runs' start_seq
-- and end_seq), UTC; null where the event has no timestamp or the span no end.
SELECT
    r.run_id,
    s.ts AS eval_started_at,
    c.ts AS eval_completed_at
FROM eval_runs AS r
LEFT JOIN events AS s
    ON s.run_id = r.run_id AND s.sequence = r.start_seq AND s.type = 'eval.started'
LEFT JOIN events AS c
    ON c.run_id = r.run_id AND c.sequence = r.end_seq AND c.type = 'eval.completed'
