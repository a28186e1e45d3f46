-- name: span_usage
-- The provider.usage events inside each eval's span (§2.1, E-2), each with the trial
-- segment it sits in: segment_no counts the span's eval.scored events before it (an as-of join
-- on sequence, so no event is sorted with its payload); events after the last eval.scored sit
-- in a segment no trial owns.
WITH in_span AS (
    SELECT e.*
    FROM usage_events AS e
    JOIN eval_runs AS r ON e.run_id = r.run_id
    WHERE r.started_count = 1
        AND e.sequence > r.start_seq
        AND (r.end_seq IS NULL OR e.sequence < r.end_seq)
)
SELECT e.*, coalesce(s.segment_no + 1, 0)::BIGINT AS segment_no
FROM in_span AS e
ASOF LEFT JOIN span_scored AS s ON e.run_id = s.run_id AND e.sequence > s.sequence
