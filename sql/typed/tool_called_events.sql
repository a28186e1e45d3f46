-- name: tool_called_events
-- reads: events
-- One row per agent.tool-called (§2.2): the agent (agentId | agent.agentId), the tool (toolName |
-- toolId) and the input (inputs | arguments; absent reads as {}, an explicit null stays null: D-2),
-- with the payload text kept where a number could lose digits (D-7). Read from `events`.
SELECT
    run_id,
    sequence,
    coalesce(
        json_string(tool_called_field(f, 'agentId')),
        json_string(tool_called_field(f, 'agent.agentId'))
    ) AS agent_id,
    coalesce(
        json_string(tool_called_field(f, 'toolName')), json_string(tool_called_field(f, 'toolId'))
    ) AS tool_name,
    CAST(
        coalesce(tool_called_field(f, 'inputs'), tool_called_field(f, 'arguments'), '{}') AS VARCHAR
    ) AS inputs,
    exact_payload
FROM events
WHERE type = 'agent.tool-called'
