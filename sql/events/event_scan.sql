-- name: event_scan
-- One row per row of scan_rows, in the order read, its payload parsed once (§2.2, D-1, D-2,
-- D-3 JSON check, E-6): v1 type names mapped to v2 (D-1), a null payload cell read as JSON null
-- (E-6). For the types grading reads, `f` holds, as JSON texts, the payload fields it reads (D-2
-- aliases side by side), from one TRY(json_extract(...)), which is NULL exactly when the text is
-- not JSON: it is also the validity check (payload_json); other types are only checked
-- (json_valid), eval.completed included. The strict checks (D-7, E-26, E-61) flag the payloads
-- DuckDB's lenient parser may read differently from JSON (payload_suspect), with their text
-- (suspect_payload) for the strict second reading. Then each type's typed fields, read off `f`
-- (D-2, D-5, D-11, D-14, E-2, E-77, E-78): null on rows of other types. Reads scan_rows (run_id,
-- sequence, sequence_ok, type, payload, ts, row_hash), or rows re-read for a second look in its
-- place.
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
        -- the keys of the eval and bracket payloads, for the repeated-key check below (E-26)
        CASE WHEN payload_json AND graded_type AND type NOT IN (
            'agent.tool-called', 'provider.usage'
        ) THEN json_keys(payload) END AS top_keys
    FROM checked
),
flagged AS (
    SELECT
        *,
        -- DuckDB's parser is lenient where JSON is not: NaN/Infinity, and a repeated key (JSON
        -- parsers keep the last; DuckDB reads the first) get a second look in Python. Keys are
        -- checked on the few eval and bracket events, where a misread key would change a score
        -- or a trial (E-26).
        CASE
            WHEN NOT payload_json THEN false
            WHEN contains(payload, 'NaN') OR contains(payload, 'Infinity') THEN true
            -- DuckDB accepts trailing commas, which JSON does not have (RFC 8259, E-61)
            WHEN regexp_matches(payload, ',\s*[\]}]') THEN true
            -- json_keys lists a repeated key each time it occurs (and no key for a non-object)
            ELSE coalesce(len(top_keys) <> len(list_distinct(top_keys)), false)
        END AS payload_suspect
    FROM keyed
),
with_texts AS (
    SELECT
        *,
        -- DuckDB reads non-integral JSON numbers as doubles; where digits could be lost (16 or
        -- more number characters in a row), keep the text so arguments compare exactly (D-7)
        CASE
            WHEN type = 'agent.tool-called' AND regexp_matches(payload, '[-+.0-9eE]{16}')
            THEN payload
        END AS exact_payload,
        -- trialIndex as written, when its parsed value may hide a fraction (1.0000000000000001:
        -- D-5)
        CASE
            WHEN type = 'eval.scored' AND contains(CAST(f[2] AS VARCHAR), '.') THEN coalesce(
                regexp_extract(payload, '"trialIndex"\s*:\s*(-?[0-9][0-9.eE+-]*)', 1), ''
            )
        END AS trial_index_text,
        CASE WHEN payload_suspect THEN payload END AS suspect_payload,
        -- the numbers the typed fields below read (D-11: only a JSON number is a number)
        CASE type
            WHEN 'provider.usage' THEN json_number(f[1])
            WHEN 'eval.scored' THEN json_number(f[2])
            WHEN 'eval.started' THEN json_number(f[4])
        END AS count_number,
        CASE WHEN type = 'provider.usage' THEN json_number(f[2]) END AS output_number,
        CASE WHEN type = 'eval.scored' THEN json_number(f[3]) END AS score_number,
        CASE WHEN type = 'eval.scored' THEN json_number(f[5]) END AS latency_number,
        -- the cost field: provider.usage costEstimateUsd, eval.scored costUsd
        CASE type WHEN 'provider.usage' THEN f[3] WHEN 'eval.scored' THEN f[6] END AS cost_text
    FROM flagged
),
with_cost AS (SELECT *, json_number(cost_text) AS cost_number FROM with_texts)
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
    exact_payload,
    trial_index_text,
    suspect_payload,
    -- agent.tool-called and agent.invocation-started: agentId | agent.agentId (D-2)
    CASE WHEN type IN ('agent.tool-called', 'agent.invocation-started')
        THEN coalesce(json_string(f[1]), json_string(f[2]))
    END AS agent_id,
    -- agent.tool-called (§2.2): toolName | toolId, inputs | arguments (absent reads as {}, an
    -- explicit null stays null: D-2)
    CASE WHEN type = 'agent.tool-called' THEN coalesce(json_string(f[3]), json_string(f[4]))
    END AS tool_name,
    CASE WHEN type = 'agent.tool-called' THEN CAST(coalesce(f[5], f[6], '{}') AS VARCHAR)
    END AS inputs,
    -- the invocation brackets (§2.1): invocationId of both, modelClass of the start
    CASE type
        WHEN 'agent.invocation-started' THEN json_string(f[3])
        WHEN 'agent.invocation-completed' THEN json_string(f[1])
    END AS invocation_id,
    CASE WHEN type = 'agent.invocation-started' THEN json_string(f[4]) END AS model_class,
    -- provider.usage (§2.2, D-14): tokens null unless an integral JSON number 0..max_tokens()
    -- (D-11, E-77); the cost absent, ok (a number in 0..max_cost_usd(): E-77) or invalid;
    -- whether the currency is USD (absent means USD) and whether it was a cache hit
    CASE
        WHEN type = 'provider.usage' AND count_number BETWEEN 0 AND max_tokens()
            AND count_number = floor(count_number)
        THEN count_number::BIGINT
    END AS input_tokens,
    CASE
        WHEN output_number BETWEEN 0 AND max_tokens() AND output_number = floor(output_number)
        THEN output_number::BIGINT
    END AS output_tokens,
    CASE WHEN type = 'provider.usage' THEN CASE
        WHEN cost_text IS NULL THEN 'absent'
        WHEN cost_number BETWEEN 0 AND max_cost_usd() THEN 'ok'
        ELSE 'invalid'
    END END AS cost_state,
    CASE WHEN type = 'provider.usage'
        THEN f[4] IS NULL OR f[4] = 'null' OR upper(json_string(f[4])) = 'USD'
    END AS currency_usd,
    CASE WHEN type = 'provider.usage' THEN coalesce(CAST(f[5] AS VARCHAR) = 'true', false)
    END AS cache_hit,
    -- the cost of provider.usage and eval.scored as an exact decimal, when a number in range
    -- (D-11, E-77)
    CASE
        WHEN cost_number BETWEEN 0 AND max_cost_usd()
        THEN coalesce(
            TRY_CAST(CAST(cost_text AS VARCHAR) AS DECIMAL(38, 18)),
            cost_number::DECIMAL(38, 18)
        )
    END AS cost_usd,
    -- eval.scored (§2.2): taskId, trialIndex (a non-negative integral JSON number, 1.0 counts,
    -- 1.0000000000000001 does not: D-5), the host's score in [0, 1], passed, latencyMs in range
    -- (E-77) and whether a costUsd is there
    CASE WHEN type = 'eval.scored' THEN json_string(f[1]) END AS task_id,
    CASE WHEN type = 'eval.scored' THEN f[2] IS NOT NULL END AS trial_index_present,
    CASE
        WHEN type <> 'eval.scored' OR count_number IS NULL OR count_number < 0
            OR count_number <> floor(count_number)
        THEN NULL
        WHEN regexp_matches(coalesce(trial_index_text, ''), '^[0-9]+\.[0-9]*[1-9][0-9]*$')
        THEN NULL
        ELSE least(count_number, 1e15)::BIGINT
    END AS trial_index,
    CASE WHEN score_number BETWEEN 0 AND 1 THEN score_number END AS host_score,
    CASE WHEN type = 'eval.scored' AND f[4] IN ('true', 'false') THEN f[4] = 'true'
    END AS host_passed,
    CASE WHEN latency_number BETWEEN 0 AND max_latency_ms() THEN latency_number
    END AS host_latency_ms,
    CASE WHEN type = 'eval.scored' THEN cost_text IS NOT NULL END AS host_cost_present,
    -- eval.started (§2.1): suiteId, suiteVersion, whether modes holds live-shadow (E-2),
    -- trialCount (an integral JSON number of at least 1, else null; one above the limit of E-78
    -- reads as max_trials() + 1, so it never sizes anything) and baselineRunId
    CASE WHEN type = 'eval.started' THEN json_string(f[1]) END AS suite_id,
    CASE WHEN type = 'eval.started' THEN json_string(f[2]) END AS suite_version,
    CASE WHEN type = 'eval.started' THEN coalesce(
        json_type(f[3]) = 'ARRAY'
        AND list_contains(json_extract_string(f[3], '$[*]'), 'live-shadow'),
        false
    ) END AS live_shadow,
    CASE WHEN type = 'eval.started' THEN f[4] IS NOT NULL END AS trial_count_present,
    CASE
        WHEN type = 'eval.started' AND count_number >= 1 AND count_number = floor(count_number)
        THEN least(count_number, max_trials() + 1)::BIGINT
    END AS trial_count,
    CASE WHEN type = 'eval.started' THEN json_string(f[5]) END AS baseline_run_id
FROM with_cost
