-- name: span_events
-- The graded event types inside each eval's span (after eval.started, before eval.completed: §2.1,
-- E-2), with the trial segment each belongs to and the payload fields grading reads (D-2 aliases).
-- segment_no counts the eval.scored events strictly before the event, so an eval.scored closes its
-- own segment; events after the last eval.scored get a segment no trial owns.
SELECT
    e.run_id,
    e.sequence,
    e.type,
    e.ts,
    coalesce(
        count(*) FILTER (WHERE e.type = 'eval.scored') OVER (
            PARTITION BY e.run_id ORDER BY e.sequence
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        0
    ) AS segment_no,
    e.agent_id,
    e.invocation_id,
    e.model_class,
    e.tool_name,
    e.inputs,
    e.exact_payload,
    e.input_tokens,
    e.output_tokens,
    e.cost_state,
    e.cost_usd_estimate,
    e.currency_usd,
    e.cache_hit,
    e.task_id,
    e.trial_index_present,
    e.trial_index,
    e.host_score,
    e.host_passed,
    e.host_latency_ms,
    e.host_cost_present,
    e.host_cost_usd
FROM events AS e
JOIN eval_runs AS r ON e.run_id = r.run_id
WHERE e.sequence_ok
    AND e.type IN (
        'agent.invocation-started', 'agent.invocation-completed', 'agent.tool-called',
        'provider.usage', 'eval.scored'
    )
    AND e.sequence > r.start_seq
    AND (r.end_seq IS NULL OR e.sequence < r.end_seq)
    AND r.started_count = 1
