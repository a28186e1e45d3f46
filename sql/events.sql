-- name: events
-- One row per event of an eval run with the payload fields grading reads, each payload parsed
-- once (§2.2, D-2 aliases, D-3 JSON check): typed values, null where absent or of the wrong JSON
-- type. Each type extracts only its own fields. Reads the view event_rows (run_id, sequence,
-- sequence_ok, type, payload, ts).
WITH parsed AS (
    SELECT
        run_id,
        sequence,
        sequence_ok,
        type,
        ts,
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
        END END AS f
    FROM parsed
),
valued AS (
    SELECT
        *,
        -- numbers (D-11: only a JSON number is a number), per type, each parsed once
        CASE type
            WHEN 'provider.usage' THEN json_number(f[1])
            WHEN 'eval.scored' THEN json_number(f[2])
            WHEN 'eval.started' THEN json_number(f[4])
        END AS n1,
        CASE type
            WHEN 'provider.usage' THEN json_number(f[2])
            WHEN 'eval.scored' THEN json_number(f[3])
        END AS n2,
        CASE type
            WHEN 'provider.usage' THEN json_number(f[3])
            WHEN 'eval.scored' THEN json_number(f[5])
        END AS n3,
        CASE WHEN type = 'eval.scored' THEN json_number(f[6]) END AS n4
    FROM extracted
)
SELECT
    run_id,
    sequence,
    sequence_ok,
    type,
    ts,
    graded_type,
    payload_json,
    -- DuckDB's parser is lenient where JSON is not: NaN/Infinity, and a repeated key (JSON parsers
    -- keep the last; DuckDB reads the first) get a second look in Python. Keys are checked on the
    -- few eval and bracket events, where a misread key would change a score or a trial.
    CASE
        WHEN NOT payload_json THEN false
        WHEN contains(payload, 'NaN') OR contains(payload, 'Infinity') THEN true
        WHEN NOT graded_type OR type IN ('agent.tool-called', 'provider.usage') THEN false
        ELSE coalesce(
            json_type(payload) = 'OBJECT'
            AND len(json_keys(payload)) <> len(list_distinct(json_keys(payload))),
            false
        )
    END AS payload_suspect,
    -- DuckDB reads JSON numbers as doubles; where digits could be lost, keep the text (D-7)
    CASE
        WHEN type <> 'agent.tool-called' THEN NULL
        WHEN regexp_matches(payload, '[0-9][0-9.eE+-]{15,}') THEN payload
    END AS exact_payload,
    CASE
        WHEN type IN ('agent.tool-called', 'agent.invocation-started')
        THEN coalesce(json_string(f[1]), json_string(f[2]))
    END AS agent_id,
    CASE type
        WHEN 'agent.invocation-started' THEN json_string(f[3])
        WHEN 'agent.invocation-completed' THEN json_string(f[1])
    END AS invocation_id,
    CASE WHEN type = 'agent.invocation-started' THEN json_string(f[4]) END AS model_class,
    CASE
        WHEN type = 'agent.tool-called' THEN coalesce(json_string(f[3]), json_string(f[4]))
    END AS tool_name,
    CASE WHEN type = 'agent.tool-called' THEN CAST(coalesce(f[5], f[6], '{}') AS VARCHAR) END
        AS inputs,
    CASE
        WHEN type = 'provider.usage' AND n1 >= 0 AND n1 = floor(n1) AND n1 < 9e18 THEN n1::BIGINT
    END AS input_tokens,
    CASE
        WHEN type = 'provider.usage' AND n2 >= 0 AND n2 = floor(n2) AND n2 < 9e18 THEN n2::BIGINT
    END AS output_tokens,
    CASE
        WHEN type <> 'provider.usage' THEN NULL
        WHEN f[3] IS NULL THEN 'absent'
        WHEN n3 >= 0 THEN 'ok'
        ELSE 'invalid'
    END AS cost_state,
    CASE
        WHEN type = 'provider.usage' AND n3 >= 0
        THEN coalesce(TRY_CAST(CAST(f[3] AS VARCHAR) AS DECIMAL(38, 18)), n3::DECIMAL(38, 18))
    END AS cost_usd_estimate,
    CASE
        WHEN type = 'provider.usage'
        THEN f[4] IS NULL OR f[4] = 'null' OR upper(json_string(f[4])) = 'USD'
    END AS currency_usd,
    type = 'provider.usage' AND coalesce(CAST(f[5] AS VARCHAR) = 'true', false) AS cache_hit,
    CASE WHEN type = 'eval.scored' THEN json_string(f[1]) END AS task_id,
    type = 'eval.scored' AND f[2] IS NOT NULL AS trial_index_present,
    CASE
        WHEN type <> 'eval.scored' OR n1 IS NULL OR n1 < 0 OR n1 <> floor(n1) THEN NULL
        -- integral as written: 1.0 counts, 1.0000000000000001 does not (D-5)
        WHEN contains(CAST(f[2] AS VARCHAR), '.') THEN CASE
            WHEN regexp_matches(
                coalesce(regexp_extract(payload, '"trialIndex"\s*:\s*(-?[0-9][0-9.eE+-]*)', 1), ''),
                '^[0-9]+\.[0-9]*[1-9][0-9]*$'
            ) THEN NULL
            ELSE least(n1, 1e15)::BIGINT
        END
        ELSE least(n1, 1e15)::BIGINT
    END AS trial_index,
    CASE WHEN type = 'eval.scored' AND n2 BETWEEN 0 AND 1 THEN n2 END AS host_score,
    CASE WHEN type = 'eval.scored' AND f[4] IN ('true', 'false') THEN f[4] = 'true' END
        AS host_passed,
    CASE WHEN type = 'eval.scored' AND n3 >= 0 THEN n3 END AS host_latency_ms,
    type = 'eval.scored' AND f[6] IS NOT NULL AS host_cost_present,
    CASE
        WHEN type = 'eval.scored' AND n4 >= 0
        THEN coalesce(TRY_CAST(CAST(f[6] AS VARCHAR) AS DECIMAL(38, 18)), n4::DECIMAL(38, 18))
    END AS host_cost_usd,
    CASE WHEN type = 'eval.started' THEN json_string(f[1]) END AS suite_id,
    CASE WHEN type = 'eval.started' THEN json_string(f[2]) END AS suite_version,
    type = 'eval.started' AND coalesce(
        json_type(f[3]) = 'ARRAY' AND list_contains(json_extract_string(f[3], '$[*]'), 'live-shadow'),
        false
    ) AS live_shadow,
    type = 'eval.started' AND f[4] IS NOT NULL AS trial_count_present,
    CASE
        WHEN type = 'eval.started' AND n1 >= 1 AND n1 = floor(n1) THEN least(n1, 1e9)::BIGINT
    END AS trial_count,
    CASE WHEN type = 'eval.started' THEN json_string(f[5]) END AS baseline_run_id
FROM valued
