-- name: events
-- One row per event of an eval run, each payload parsed once (§2.2, D-3 JSON check): `f` holds,
-- as JSON texts, the payload fields its type's grading reads (D-2 aliases), in the order the
-- per-type relations (tool_called_events, usage_events, bracket_events, scored_events,
-- started_events) read them; other types parse nothing. Reads the view event_rows (run_id,
-- sequence, sequence_ok, type, payload, ts, row_hash).
WITH parsed AS (
    SELECT
        run_id,
        sequence,
        sequence_ok,
        type,
        ts,
        row_hash,
        type IN (
            'agent.invocation-started', 'agent.invocation-completed', 'agent.tool-called',
            'provider.usage', 'eval.started', 'eval.scored', 'eval.completed'
        ) AS graded_type,
        coalesce(json_valid(payload), false) AS payload_json,
        payload
    FROM event_rows
),
extracted AS (
    SELECT
        *,
        CASE WHEN payload_json THEN CASE type
            WHEN 'agent.tool-called' THEN json_extract(payload, [
                '$.agentId', '$.agent.agentId', '$.toolName', '$.toolId', '$.inputs', '$.arguments'
            ])
            WHEN 'provider.usage' THEN json_extract(payload, [
                '$.inputTokens', '$.outputTokens', '$.costEstimateUsd', '$.currency', '$.cacheHit'
            ])
            WHEN 'agent.invocation-started' THEN json_extract(payload, [
                '$.agentId', '$.agent.agentId', '$.invocationId', '$.modelClass'
            ])
            WHEN 'agent.invocation-completed' THEN json_extract(payload, ['$.invocationId'])
            WHEN 'eval.scored' THEN json_extract(payload, [
                '$.taskId', '$.trialIndex', '$.score', '$.passed', '$.latencyMs', '$.costUsd'
            ])
            WHEN 'eval.started' THEN json_extract(payload, [
                '$.suiteId', '$.suiteVersion', '$.modes', '$.trialCount', '$.baselineRunId'
            ])
        END END AS f,
        -- the keys of the eval and bracket payloads, for the repeated-key check below
        CASE WHEN payload_json AND graded_type AND type NOT IN (
            'agent.tool-called', 'provider.usage'
        ) THEN json_keys(payload) END AS top_keys
    FROM parsed
)
SELECT
    run_id,
    sequence,
    sequence_ok,
    type,
    ts,
    row_hash,
    graded_type,
    payload_json,
    -- DuckDB's parser is lenient where JSON is not: NaN/Infinity, and a repeated key (JSON parsers
    -- keep the last; DuckDB reads the first) get a second look in Python. Keys are checked on the
    -- few eval and bracket events, where a misread key would change a score or a trial.
    CASE
        WHEN NOT payload_json THEN false
        WHEN contains(payload, 'NaN') OR contains(payload, 'Infinity') THEN true
        -- DuckDB accepts trailing commas, which JSON does not have (RFC 8259)
        WHEN regexp_matches(payload, ',\s*[\]}]') THEN true
        -- json_keys lists a repeated key each time it occurs (and no key for a non-object)
        ELSE coalesce(len(top_keys) <> len(list_distinct(top_keys)), false)
    END AS payload_suspect,
    f,
    -- DuckDB reads non-integral JSON numbers as doubles; where digits could be lost (16 or more
    -- number characters in a row), keep the text so arguments compare exactly (D-7)
    CASE
        WHEN type = 'agent.tool-called' AND regexp_matches(payload, '[-+.0-9eE]{16}') THEN payload
    END AS exact_payload,
    -- trialIndex as written, when its parsed value may hide a fraction (1.0000000000000001: D-5)
    CASE
        WHEN type = 'eval.scored' AND contains(CAST(f[2] AS VARCHAR), '.') THEN coalesce(
            regexp_extract(payload, '"trialIndex"\s*:\s*(-?[0-9][0-9.eE+-]*)', 1), ''
        )
    END AS trial_index_text
FROM extracted
