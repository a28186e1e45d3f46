-- name: event_problems
-- reads: events, eval_runs
-- Problems found on single events of eval runs (§6, D-3, §2.1): unusable sequences (E-3, E-76)
-- and null types (E-80), payloads that are not JSON, sequence gaps (E-5), a restarted or
-- unfinished eval, eval.scored after eval.completed, an eval.completed after the one that ends the
-- span (E-113), an invalid trialCount (E-10).
-- One row per occurrence: (run_id, sequence, code).
WITH gapped_runs AS (
    SELECT run_id FROM events WHERE sequence_ok
    GROUP BY run_id HAVING max(sequence) - min(sequence) + 1 <> count(*)
)
SELECT run_id, sequence, 'sequence-invalid' AS code
FROM events WHERE NOT sequence_ok
UNION ALL
SELECT run_id, sequence, 'type-missing'
FROM events WHERE type IS NULL
UNION ALL
SELECT run_id, sequence, CASE WHEN graded_type THEN 'payload-invalid' ELSE 'payload-ignored' END
FROM events WHERE NOT payload_json
UNION ALL
SELECT run_id, sequence, 'sequence-gap'
FROM (
    SELECT run_id, sequence, sequence - lag(sequence) OVER (PARTITION BY run_id ORDER BY sequence) AS step
    FROM events
    WHERE sequence_ok AND run_id IN (SELECT run_id FROM gapped_runs)
)
WHERE step > 1
UNION ALL
SELECT e.run_id, e.sequence, 'eval-restarted'
FROM events AS e JOIN eval_runs AS r ON r.run_id = e.run_id
WHERE e.type = 'eval.started' AND e.sequence > r.start_seq
UNION ALL
-- (an eval run whose eval.started has no usable sequence is only sequence-invalid, E-3)
SELECT run_id, start_seq, 'eval-incomplete'
FROM eval_runs WHERE end_seq IS NULL AND start_seq IS NOT NULL
UNION ALL
SELECT e.run_id, e.sequence, 'scored-after-completed'
FROM events AS e JOIN eval_runs AS r ON r.run_id = e.run_id
WHERE e.type = 'eval.scored' AND e.sequence > r.end_seq
UNION ALL
SELECT e.run_id, e.sequence, 'completed-repeated'
FROM events AS e JOIN eval_runs AS r ON r.run_id = e.run_id
WHERE e.type = 'eval.completed' AND e.sequence > r.end_seq
UNION ALL
SELECT run_id, start_seq, 'trial-count-invalid'
FROM eval_runs WHERE trial_count_present AND trial_count IS NULL AND start_seq IS NOT NULL
ORDER BY run_id, sequence, code
