-- name: span_scored
-- The eval.scored events inside each eval's span (after its only eval.started, before
-- eval.completed: §2.1, E-2), numbered per run: an eval.scored closes trial segment `segment_no`,
-- which starts after the previous eval.scored (or the eval.started) at `segment_start_seq`.
SELECT
    s.*,
    (row_number() OVER (PARTITION BY s.run_id ORDER BY s.sequence) - 1)::BIGINT AS segment_no,
    coalesce(
        lag(s.sequence) OVER (PARTITION BY s.run_id ORDER BY s.sequence), r.start_seq
    ) AS segment_start_seq
FROM scored_events AS s
JOIN eval_runs AS r ON s.run_id = r.run_id
WHERE r.started_count = 1
    AND s.sequence > r.start_seq
    AND (r.end_seq IS NULL OR s.sequence < r.end_seq)
