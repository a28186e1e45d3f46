-- name: trial_segments
-- One row per eval.scored inside the eval span: its trial segment (§2.1), the segment's bracket
-- (the first agent.invocation-started through the agent.invocation-completed with the same
-- invocationId, else through the segment's end), and the host record (§2.2).
WITH first_start AS (
    -- the fields of the first start, nulls included: arg_min of each field alone would skip a
    -- null and take a nested invocation's value (E-12..E-14)
    SELECT
        run_id, segment_no,
        arg_min(
            {'seq': sequence, 'ts': ts, 'invocation_id': invocation_id, 'agent_id': agent_id,
             'model_class': model_class},
            sequence
        ) AS s
    FROM span_brackets
    WHERE type = 'agent.invocation-started'
    GROUP BY run_id, segment_no
),
bracket_start AS (
    SELECT
        run_id, segment_no,
        s.seq AS start_seq,
        s.ts AS start_ts,
        s.invocation_id AS invocation_id,
        s.agent_id AS agent_id,
        s.model_class AS model_class
    FROM first_start
),
bracket_end AS (
    SELECT
        b.run_id, b.segment_no,
        min(e.sequence) AS end_seq,
        arg_min(e.ts, e.sequence) AS end_ts
    FROM bracket_start AS b
    JOIN span_brackets AS e
        ON e.run_id = b.run_id
        AND e.segment_no = b.segment_no
        AND e.type = 'agent.invocation-completed'
        AND e.sequence > b.start_seq
        AND e.invocation_id = b.invocation_id
    GROUP BY b.run_id, b.segment_no
)
SELECT
    s.run_id,
    s.segment_no,
    s.sequence AS scored_seq,
    s.segment_start_seq,
    s.task_id,
    s.trial_index_present,
    s.trial_index,
    s.host_score,
    s.host_passed,
    s.host_latency_ms,
    s.host_cost_present,
    s.host_cost_usd,
    b.start_seq IS NOT NULL AS has_bracket,
    e.end_seq IS NOT NULL AS bracket_closed,
    b.start_seq AS bracket_start_seq,
    coalesce(e.end_seq, s.sequence) AS bracket_end_seq,
    b.agent_id AS target_agent_id,
    b.model_class,
    CASE
        WHEN b.start_seq IS NOT NULL
        -- in HUGEINT: two timestamps 290,000 years apart overflow BIGINT microseconds (E-81)
        THEN (epoch_us(coalesce(e.end_ts, s.ts))::HUGEINT - epoch_us(b.start_ts)) / 1000.0
    END AS bracket_span_ms
FROM span_scored AS s
LEFT JOIN bracket_start AS b ON b.run_id = s.run_id AND b.segment_no = s.segment_no
LEFT JOIN bracket_end AS e ON e.run_id = s.run_id AND e.segment_no = s.segment_no
