-- name: macros
-- Small functions the queries share. v2_type maps v1 event type names to v2 (D-1); unknown
-- types pass through and are ignored later, never an error.
CREATE OR REPLACE TEMP MACRO v2_type(t) AS CASE t
    WHEN 'agent.invocation.started' THEN 'agent.invocation-started'
    WHEN 'agent.invocation.completed' THEN 'agent.invocation-completed'
    WHEN 'agent.toolCalled' THEN 'agent.tool-called'
    WHEN 'agent.toolReturned' THEN 'agent.tool-returned'
    ELSE t
END;
-- A JSON number's text starts with '-' or a digit (strings, booleans, null, objects and arrays
-- never do), so its type is read off the first character and its value off the text: no parse.
CREATE OR REPLACE TEMP MACRO json_number(v) AS
    CASE WHEN ascii(CAST(v AS VARCHAR)) = 45 OR ascii(CAST(v AS VARCHAR)) BETWEEN 48 AND 57
    THEN TRY_CAST(CAST(v AS VARCHAR) AS DOUBLE) END;
-- A JSON string's value: the text inside the quotes, unescaped by the parser only when needed.
CREATE OR REPLACE TEMP MACRO json_string(v) AS
    CASE WHEN starts_with(CAST(v AS VARCHAR), '"') THEN
        CASE WHEN contains(CAST(v AS VARCHAR), '\') THEN v ->> '$'
        ELSE substr(CAST(v AS VARCHAR), 2, length(CAST(v AS VARCHAR)) - 2) END
    END;
-- The events of one per-type relation (`source`, named as text: tool_called_events, usage_events,
-- bracket_events) inside each eval's span (after its only eval.started, before eval.completed:
-- §2.1, E-2), each with the trial segment it sits in: segment_no counts the span's eval.scored
-- events before it (an as-of join on sequence with span_scored, so no event is sorted with its
-- payload); events after the last eval.scored sit in a segment no trial owns. Read by
-- span_calls, span_usage and span_brackets, so the rule is written once.
CREATE OR REPLACE TEMP MACRO span_events(source) AS TABLE
    WITH in_span AS (
        SELECT e.*
        FROM query_table(source) AS e
        JOIN eval_runs AS r ON e.run_id = r.run_id
        WHERE r.started_count = 1
            AND e.sequence > r.start_seq
            AND (r.end_seq IS NULL OR e.sequence < r.end_seq)
    )
    SELECT e.*, coalesce(s.segment_no + 1, 0)::BIGINT AS segment_no
    FROM in_span AS e
    ASOF LEFT JOIN span_scored AS s ON e.run_id = s.run_id AND e.sequence > s.sequence;
