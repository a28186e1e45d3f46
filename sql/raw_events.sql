-- name: raw_events
-- Every input row of an eval run (a runId with an eval.started, §2.1), v1 type names mapped to v2
-- (D-1), the payload checked as JSON (D-3). Rows without a runId are left to the caller (E-3).
-- Reads: source_events (run_id, sequence, sequence_ok, type, payload, ts).
WITH typed AS (
    SELECT
        run_id,
        sequence,
        sequence_ok,
        CASE type
            WHEN 'agent.invocation.started' THEN 'agent.invocation-started'
            WHEN 'agent.invocation.completed' THEN 'agent.invocation-completed'
            WHEN 'agent.toolCalled' THEN 'agent.tool-called'
            WHEN 'agent.toolReturned' THEN 'agent.tool-returned'
            ELSE type
        END AS type,
        -- a null payload cell is read as the JSON value null: valid, with no fields (E-6)
        coalesce(payload, 'null') AS payload,
        ts
    FROM source_events
    WHERE run_id IS NOT NULL
)
SELECT
    run_id,
    sequence,
    sequence_ok,
    type,
    type IN (
        'agent.invocation-started', 'agent.invocation-completed', 'agent.tool-called',
        'provider.usage', 'eval.started', 'eval.scored', 'eval.completed'
    ) AS graded_type,
    payload,
    coalesce(json_valid(payload), false) AS payload_json,
    -- DuckDB's parser is lenient where JSON is not: NaN/Infinity and repeated keys get a second look.
    CASE
        WHEN coalesce(json_valid(payload), false) THEN
            contains(payload, 'NaN') OR contains(payload, 'Infinity')
            OR coalesce(
                json_type(payload) = 'OBJECT'
                AND len(json_keys(payload)) <> len(list_distinct(json_keys(payload))),
                false
            )
        ELSE false
    END AS payload_suspect,
    ts
FROM typed
WHERE run_id IN (SELECT run_id FROM typed WHERE type = 'eval.started')
