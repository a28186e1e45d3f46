-- name: event_scan
-- reads: scan_rows
-- One row per row of scan_rows, in the order read, its payload parsed once (§2.2, D-1, D-2,
-- D-3 JSON check, E-6): v1 type names mapped to v2 (D-1), a null payload cell read as JSON null
-- (E-6). For the types grading reads, `f` holds, as JSON texts, the payload fields it reads (D-2
-- aliases side by side; the paths and their order are evalbatch/extract/scan_fields.py's, E-134),
-- from one TRY(json_extract(...)), which is NULL exactly when the text is
-- not JSON: it is also the validity check (payload_json); other types are only checked
-- (json_valid), eval.completed included; the three dispatch types also hold the child runs they
-- name (E-102), read only when a suite includes delegates, and the two vendor types of an ingested
-- Inspect log hold its names (E-146). The strict checks (D-7, E-26, E-61) flag the payloads
-- DuckDB's lenient parser may read differently from JSON (payload_suspect), with their text
-- (suspect_payload) for the strict second reading. Reads scan_rows (run_id, sequence,
-- sequence_ok, type, payload, ts, row_hash), or rows re-read for a second look in its place.
WITH rows AS (
    SELECT
        run_id, sequence, sequence_ok, v2_type(type) AS type,
        coalesce(payload, 'null') AS payload, ts, row_hash
    FROM scan_rows
),
extracted AS (
    SELECT
        *,
        CASE type
            WHEN 'agent.tool-called' THEN TRY(json_extract(payload, [
                '$.agentId', '$.agent.agentId', '$.toolName', '$.toolId', '$.inputs', '$.arguments'
            ]))
            WHEN 'provider.usage' THEN TRY(json_extract(payload, [
                '$.inputTokens', '$.outputTokens', '$.costEstimateUsd', '$.currency', '$.cacheHit'
            ]))
            WHEN 'agent.invocation-started' THEN TRY(json_extract(payload, [
                '$.agentId', '$.agent.agentId', '$.invocationId', '$.modelClass'
            ]))
            WHEN 'agent.invocation-completed' THEN TRY(json_extract(payload, ['$.invocationId']))
            WHEN 'eval.scored' THEN TRY(json_extract(payload, [
                '$.taskId', '$.trialIndex', '$.score', '$.passed', '$.latencyMs', '$.costUsd'
            ]))
            WHEN 'eval.started' THEN TRY(json_extract(payload, [
                '$.suiteId', '$.suiteVersion', '$.modes', '$.trialCount', '$.baselineRunId'
            ]))
            -- the child runs a delegated trajectory reads (E-102), checked as other types are
            WHEN 'node.dispatched' THEN TRY(json_extract(payload, ['$.childRunId']))
            WHEN 'workflow-chain.event' THEN TRY(json_extract(payload, ['$.childRunId']))
            WHEN 'dispatch.joined' THEN TRY(json_extract(payload, ['$.mergeOrder']))
            -- what an Inspect log calls its run and each trial (E-146), what errored (E-147)
            WHEN 'evalbatch.inspect.eval' THEN TRY(json_extract(payload, [
                '$.task', '$.model', '$.logFile', '$.erroredLeftOut'
            ]))
            WHEN 'evalbatch.inspect.sample' THEN TRY(json_extract(payload, [
                '$.taskId', '$.trialIndex', '$.sampleId', '$.epoch', '$.errored'
            ]))
        END AS f
    FROM rows
),
checked AS (
    SELECT
        *,
        type IN (
            'agent.invocation-started', 'agent.invocation-completed', 'agent.tool-called',
            'provider.usage', 'eval.started', 'eval.scored', 'eval.completed'
        ) AS graded_type,
        CASE
            WHEN type IN (
                'agent.invocation-started', 'agent.invocation-completed', 'agent.tool-called',
                'provider.usage', 'eval.started', 'eval.scored'
            ) THEN f IS NOT NULL
            ELSE coalesce(json_valid(payload), false)
        END AS payload_json
    FROM extracted
),
keyed AS (
    SELECT
        *,
        -- the payload's own keys, each as often as it is written, escapes read (`\u0061`):
        -- for the repeated-key check below (E-26)
        CASE WHEN payload_json AND graded_type THEN json_keys(payload) END AS top_keys,
        -- and the keys of a tool call's `agent` object, which holds agentId (D-2)
        CASE WHEN payload_json AND type = 'agent.tool-called'
            AND (contains(payload, '"agent"') OR contains(payload, '\u'))
        THEN json_keys(payload, '$.agent') END AS agent_keys
    FROM checked
),
flagged AS (
    SELECT
        *,
        -- DuckDB's parser is lenient where JSON is not: NaN/Infinity, and a repeated key (JSON
        -- parsers keep the last; DuckDB reads the first: E-26) get a second look in Python.
        CASE
            WHEN NOT payload_json THEN false
            WHEN contains(payload, 'NaN') OR contains(payload, 'Infinity') THEN true
            -- DuckDB accepts trailing commas, which JSON does not have (RFC 8259, E-61)
            WHEN regexp_matches(payload, ',\s*[\]}]') THEN true
            -- json_keys lists a repeated key each time it occurs (and no key for a non-object)
            WHEN len(top_keys) <> len(list_distinct(top_keys)) THEN true
            ELSE coalesce(len(agent_keys) <> len(list_distinct(agent_keys)), false)
        END AS payload_suspect
    FROM keyed
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
    payload_suspect,
    f,
    -- DuckDB reads non-integral JSON numbers as doubles; where digits could be lost (16 or more
    -- number characters in a row), keep the text so arguments compare exactly (D-7)
    CASE
        WHEN type = 'agent.tool-called' AND regexp_matches(payload, '[-+.0-9eE]{16}') THEN payload
    END AS exact_payload,
    -- trialIndex as written, when its parsed value may hide a fraction (1.0000000000000001: D-5)
    CASE
        WHEN type = 'eval.scored' AND contains(CAST(scored_field(f, 'trialIndex') AS VARCHAR), '.')
        THEN coalesce(
            regexp_extract(payload, '"trialIndex"\s*:\s*(-?[0-9][0-9.eE+-]*)', 1), ''
        )
    END AS trial_index_text,
    CASE WHEN payload_suspect THEN payload END AS suspect_payload
FROM flagged
