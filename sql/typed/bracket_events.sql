-- name: bracket_events
-- One row per invocation bracket event (§2.1): agent.invocation-started with its agent (D-2),
-- invocationId and modelClass; agent.invocation-completed with its invocationId. Read from `event_scan`,
-- which reads the typed fields off each payload's one parse.
SELECT
    run_id,
    sequence,
    type,
    ts,
    agent_id,
    invocation_id,
    model_class
FROM event_scan
WHERE type IN ('agent.invocation-started', 'agent.invocation-completed')
