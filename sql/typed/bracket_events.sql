-- name: bracket_events
-- reads: events
-- One row per invocation bracket event (§2.1): agent.invocation-started with its agent (D-2),
-- invocationId and modelClass; agent.invocation-completed with its invocationId. Read from
-- `events`.
SELECT
    run_id,
    sequence,
    type,
    ts,
    CASE
        WHEN type = 'agent.invocation-started' THEN coalesce(
            json_string(invocation_started_field(f, 'agentId')),
            json_string(invocation_started_field(f, 'agent.agentId'))
        )
    END AS agent_id,
    CASE
        WHEN type = 'agent.invocation-started'
        THEN json_string(invocation_started_field(f, 'invocationId'))
        ELSE json_string(invocation_completed_field(f, 'invocationId'))
    END AS invocation_id,
    CASE
        WHEN type = 'agent.invocation-started'
        THEN json_string(invocation_started_field(f, 'modelClass'))
    END AS model_class
FROM events
WHERE type IN ('agent.invocation-started', 'agent.invocation-completed')
