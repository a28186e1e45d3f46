-- name: span_events
-- The graded event types inside each eval's span (after eval.started, before eval.completed: §2.1,
-- E-2), with the trial segment each belongs to and the payload fields grading reads (D-2 aliases).
-- segment_no counts the eval.scored events strictly before the event, so an eval.scored closes its
-- own segment; events after the last eval.scored get a segment no trial owns.
WITH spanned AS (
    SELECT e.run_id, e.sequence, e.type, e.ts, e.payload, e.payload_json
    FROM events AS e
    JOIN eval_runs AS r ON e.run_id = r.run_id
    WHERE e.graded_type
        AND e.type IN (
            'agent.invocation-started', 'agent.invocation-completed', 'agent.tool-called',
            'provider.usage', 'eval.scored'
        )
        AND e.sequence > r.start_seq
        AND (r.end_seq IS NULL OR e.sequence < r.end_seq)
        AND r.started_count = 1
),
fields AS (
    SELECT
        run_id, sequence, type, ts, payload_json,
        -- DuckDB reads JSON numbers as doubles; where digits could be lost, keep the text (D-7)
        CASE
            WHEN type = 'agent.tool-called' AND regexp_matches(payload, '[0-9][0-9.eE+-]{15,}')
            THEN payload
        END AS exact_payload,
        CASE
            WHEN type = 'eval.scored'
            THEN regexp_extract(payload, '"trialIndex"\s*:\s*(-?[0-9][0-9.eE+-]*)', 1)
        END AS trial_index_text,
        json_extract(CASE WHEN payload_json THEN payload END, [
            '$.agentId', '$.agent.agentId', '$.invocationId', '$.modelClass',
            '$.toolName', '$.toolId', '$.inputs', '$.arguments',
            '$.inputTokens', '$.outputTokens', '$.costEstimateUsd', '$.currency', '$.cacheHit',
            '$.taskId', '$.trialIndex', '$.score', '$.passed', '$.latencyMs', '$.costUsd'
        ]) AS f
    FROM spanned
)
SELECT
    run_id,
    sequence,
    type,
    ts,
    payload_json,
    coalesce(
        count(*) FILTER (WHERE type = 'eval.scored') OVER (
            PARTITION BY run_id ORDER BY sequence ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0
    ) AS segment_no,
    -- brackets and calls
    coalesce(
        CASE WHEN json_type(f[1]) = 'VARCHAR' THEN f[1] ->> '$' END,
        CASE WHEN json_type(f[2]) = 'VARCHAR' THEN f[2] ->> '$' END
    ) AS agent_id,
    CASE WHEN json_type(f[3]) = 'VARCHAR' THEN f[3] ->> '$' END AS invocation_id,
    CASE WHEN json_type(f[4]) = 'VARCHAR' THEN f[4] ->> '$' END AS model_class,
    coalesce(
        CASE WHEN json_type(f[5]) = 'VARCHAR' THEN f[5] ->> '$' END,
        CASE WHEN json_type(f[6]) = 'VARCHAR' THEN f[6] ->> '$' END
    ) AS tool_name,
    CAST(coalesce(f[7], f[8], '{}') AS VARCHAR) AS inputs,
    exact_payload,
    -- provider.usage
    CASE
        WHEN json_type(f[9]) IN ('BIGINT', 'UBIGINT') AND TRY_CAST(f[9] AS BIGINT) >= 0
            THEN TRY_CAST(f[9] AS BIGINT)
        WHEN json_type(f[9]) = 'DOUBLE' AND TRY_CAST(f[9] AS DOUBLE) >= 0
            AND TRY_CAST(f[9] AS DOUBLE) = floor(TRY_CAST(f[9] AS DOUBLE)) AND TRY_CAST(f[9] AS DOUBLE) < 9e18
            THEN TRY_CAST(TRY_CAST(f[9] AS DOUBLE) AS BIGINT)
    END AS input_tokens,
    CASE
        WHEN json_type(f[10]) IN ('BIGINT', 'UBIGINT') AND TRY_CAST(f[10] AS BIGINT) >= 0
            THEN TRY_CAST(f[10] AS BIGINT)
        WHEN json_type(f[10]) = 'DOUBLE' AND TRY_CAST(f[10] AS DOUBLE) >= 0
            AND TRY_CAST(f[10] AS DOUBLE) = floor(TRY_CAST(f[10] AS DOUBLE)) AND TRY_CAST(f[10] AS DOUBLE) < 9e18
            THEN TRY_CAST(TRY_CAST(f[10] AS DOUBLE) AS BIGINT)
    END AS output_tokens,
    CASE
        WHEN f[11] IS NULL THEN 'absent'
        WHEN json_type(f[11]) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND TRY_CAST(f[11] AS DOUBLE) >= 0
            THEN 'ok'
        ELSE 'invalid'
    END AS cost_state,
    CASE
        WHEN json_type(f[11]) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND TRY_CAST(f[11] AS DOUBLE) >= 0
            THEN coalesce(
                TRY_CAST(CAST(f[11] AS VARCHAR) AS DECIMAL(38, 18)),
                TRY_CAST(TRY_CAST(f[11] AS DOUBLE) AS DECIMAL(38, 18))
            )
    END AS cost_usd_estimate,
    f[12] IS NULL OR json_type(f[12]) = 'NULL'
        OR (json_type(f[12]) = 'VARCHAR' AND upper(f[12] ->> '$') = 'USD') AS currency_usd,
    coalesce(json_type(f[13]) = 'BOOLEAN' AND TRY_CAST(f[13] AS BOOLEAN), false) AS cache_hit,
    -- eval.scored
    CASE WHEN json_type(f[14]) = 'VARCHAR' THEN f[14] ->> '$' END AS task_id,
    f[15] IS NOT NULL AS trial_index_present,
    CASE
        WHEN json_type(f[15]) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
            AND TRY_CAST(f[15] AS DOUBLE) >= 0
            AND TRY_CAST(f[15] AS DOUBLE) = floor(TRY_CAST(f[15] AS DOUBLE))
            -- integral as written: 1.0 counts, 1.0000000000000001 does not (D-5)
            AND NOT regexp_matches(coalesce(trial_index_text, ''), '^[0-9]+\.[0-9]*[1-9][0-9]*$')
        THEN least(TRY_CAST(f[15] AS DOUBLE), 1e15)::BIGINT
    END AS trial_index,
    CASE
        WHEN json_type(f[16]) IN ('BIGINT', 'UBIGINT', 'DOUBLE')
            AND TRY_CAST(f[16] AS DOUBLE) BETWEEN 0 AND 1
        THEN TRY_CAST(f[16] AS DOUBLE)
    END AS host_score,
    CASE WHEN json_type(f[17]) = 'BOOLEAN' THEN TRY_CAST(f[17] AS BOOLEAN) END AS host_passed,
    CASE
        WHEN json_type(f[18]) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND TRY_CAST(f[18] AS DOUBLE) >= 0
        THEN TRY_CAST(f[18] AS DOUBLE)
    END AS host_latency_ms,
    f[19] IS NOT NULL AS host_cost_present,
    CASE
        WHEN json_type(f[19]) IN ('BIGINT', 'UBIGINT', 'DOUBLE') AND TRY_CAST(f[19] AS DOUBLE) >= 0
            THEN coalesce(
                TRY_CAST(CAST(f[19] AS VARCHAR) AS DECIMAL(38, 18)),
                TRY_CAST(TRY_CAST(f[19] AS DOUBLE) AS DECIMAL(38, 18))
            )
    END AS host_cost_usd
FROM fields
