-- name: generate_events
-- Synthetic OpenWOP eval-run logs for the benchmark, generated inside DuckDB (no per-event Python).
-- Each run: eval.started, then per task and trial a bracket holding 1-8 provider.usage and 1-8
-- agent.tool-called/-returned pairs (some by a delegate agent), agent.decided, the completion, a
-- judge provider.usage for about half the trials, eval.scored; then eval.completed, run.completed.
-- Pseudo-random choices come from hash(seed, ids), so a size and seed always give the same file.
-- Params: $first_run, $runs, $tasks, $trials, $seed. Rows come out ordered by run and sequence.
-- bench/run.py uses it for both shapes: A, many small runs ($tasks 20, $trials 3), and B, few
-- large runs ($tasks 1000, $trials 10); the trials are the same, only their number per run differs.
-- Task ids are task-000..task-999 (three digits), so $tasks is at most 1000.
WITH trial AS (
    SELECT
        r.range AS run_no,
        t.range AS task_no,
        k.range AS trial_no,
        t.range * $trials + k.range AS trial_order,
        1 + hash($seed, r.range, t.range, k.range, 'calls') % 8 AS n_calls,
        1 + hash($seed, r.range, t.range, k.range, 'usage') % 8 AS n_usage,
        hash($seed, r.range, t.range, k.range, 'judge') % 2 AS judge
    FROM range($first_run, $first_run + $runs) AS r, range($tasks) AS t, range($trials) AS k
),
placed AS (
    SELECT
        *,
        -- events of one trial: started, usage, call+return pairs, decided, completed, judge, scored
        4 + n_usage + 2 * n_calls + judge AS n_events,
        1 + coalesce(sum(4 + n_usage + 2 * n_calls + judge) OVER (
            PARTITION BY run_no ORDER BY trial_order
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ), 0) AS base_seq
    FROM trial
),
slots AS (
    -- slot 0 started; slots 1+3j, 2+3j, 3+3j: usage j, call j, return j; 25 decided;
    -- 26 completed; 27 judge; 28 scored
    SELECT p.*, s.range AS slot, (s.range - 1) // 3 AS j, (s.range - 1) % 3 AS m
    FROM placed AS p, range(29) AS s
    WHERE s.range = 0
        OR (s.range BETWEEN 1 AND 24 AND (
            ((s.range - 1) % 3 = 0 AND (s.range - 1) // 3 < p.n_usage)
            OR ((s.range - 1) % 3 > 0 AND (s.range - 1) // 3 < p.n_calls)))
        OR s.range IN (25, 26, 28)
        OR (s.range = 27 AND p.judge = 1)
),
trial_events AS (
    SELECT
        run_no,
        task_no,
        trial_no,
        trial_order,
        slot,
        j,
        m,
        base_seq + CASE
            WHEN slot = 0 THEN 0
            WHEN slot <= 24 THEN 1 + least(j, n_usage) + 2 * least(j, n_calls)
                + CASE WHEN m >= 1 AND j < n_usage THEN 1 ELSE 0 END
                + CASE WHEN m = 2 AND j < n_calls THEN 1 ELSE 0 END
            WHEN slot = 25 THEN 1 + n_usage + 2 * n_calls
            WHEN slot = 26 THEN 2 + n_usage + 2 * n_calls
            WHEN slot = 27 THEN 3 + n_usage + 2 * n_calls
            ELSE 3 + n_usage + 2 * n_calls + judge
        END AS sequence,
        hash($seed, run_no, trial_order, slot) AS h
    FROM slots
),
run_ends AS (
    SELECT run_no, max(sequence) AS last_seq FROM trial_events GROUP BY run_no
),
events AS (
    SELECT
        run_no,
        sequence,
        CASE
            WHEN slot = 0 THEN 'agent.invocation-started'
            WHEN slot <= 24 AND m = 0 THEN 'provider.usage'
            WHEN slot <= 24 AND m = 1 THEN 'agent.tool-called'
            WHEN slot <= 24 THEN 'agent.tool-returned'
            WHEN slot = 25 THEN 'agent.decided'
            WHEN slot = 26 THEN 'agent.invocation-completed'
            WHEN slot = 27 THEN 'provider.usage'
            ELSE 'eval.scored'
        END AS type,
        CASE
            WHEN slot IN (0, 26) THEN
                '{"invocationId":"inv-' || run_no || '-' || trial_order
                || '","agentId":"acme.agents.support","source":"run-api","modelClass":"general"'
                || CASE WHEN slot = 26 THEN ',"outcome":"completed"}' ELSE '}' END
            WHEN slot <= 24 AND m = 0 OR slot = 27 THEN
                '{"provider":"acme","model":"acme-large","inputTokens":' || (200 + h % 3000)
                || ',"outputTokens":' || (20 + h % 400)
                || ',"costEstimateUsd":' || printf('%.6f', (h % 5000) / 1000000.0)
                || CASE WHEN h % 17 = 0 THEN ',"cacheHit":true}' ELSE '}' END
            WHEN slot <= 24 THEN
                '{"agentId":"' || CASE WHEN h % 5 = 0 THEN 'acme.agents.helper' ELSE 'acme.agents.support' END
                || '","toolName":"' || ['crm:lookup-order', 'billing:refund', 'kb:search', 'crm:update'][1 + (hash($seed, run_no, trial_order, j) % 4)::BIGINT]
                || '","callId":"call-' || run_no || '-' || trial_order || '-' || j || '"'
                || CASE WHEN m = 1
                    THEN ',"inputs":{"orderId":' || (hash($seed, run_no, trial_order, j) % 50)
                        || ',"amountMinor":' || (100 * (hash($seed, run_no, trial_order, j, 'a') % 60)) || '}}'
                    ELSE ',"status":"ok","durationMs":' || (h % 900) || '}'
                END
            WHEN slot = 25 THEN '{"agentId":"acme.agents.support","decision":"resolve"}'
            ELSE
                '{"taskId":"task-' || lpad(task_no::VARCHAR, 3, '0') || '","trialIndex":' || trial_no
                || ',"score":' || CASE WHEN h % 10 < 7 THEN '1.0' ELSE printf('%.2f', (h % 100) / 100.0) END
                || ',"passed":' || CASE WHEN h % 10 < 7 THEN 'true' ELSE 'false' END
                || ',"latencyMs":' || (500 + h % 20000) || '}'
        END AS payload
    FROM trial_events
    UNION ALL
    SELECT
        run_no, 0, 'eval.started',
        '{"suiteId":"acme.bench.evals.support","suiteVersion":"1.0.0","taskCount":' || $tasks
        || ',"modes":["golden","rubric"],"trialCount":' || $trials || '}'
    FROM run_ends
    UNION ALL
    SELECT run_no, last_seq + 1, 'eval.completed',
        '{"aggregateScore":0.5,"passed":false,"taskCount":' || $tasks || ',"passedCount":0}'
    FROM run_ends
    UNION ALL
    SELECT run_no, last_seq + 2, 'run.completed', '{"outputs":{}}' FROM run_ends
)
SELECT
    'evt-' || lpad(run_no::VARCHAR, 10, '0') || '-' || lpad(sequence::VARCHAR, 8, '0') AS eventId,
    'acme/bench-run-' || lpad(run_no::VARCHAR, 10, '0') AS runId,
    sequence::BIGINT AS sequence,
    type,
    payload,
    strftime(TIMESTAMPTZ '2026-11-02 00:00:00+00' + to_milliseconds(run_no * 1000000 + sequence * 20),
        '%Y-%m-%dT%H:%M:%S.%gZ') AS timestamp,
    2::BIGINT AS schemaVersion
FROM events
ORDER BY run_no, sequence
